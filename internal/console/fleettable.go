package console

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/duration"
)

// fleetRow is one conversation, or an agent without any conversation.
type fleetRow struct {
	Supervisor, Namespace, Agent, Conversation string
	// State is Active, Paused or Archived ("Pending" before the supervisor
	// reported one; "" for an agent without conversations).
	State string
	// Execution is BUSY, IDLE, WAITING_FOR_INPUT, … while the conversation is live.
	Execution string
	Age       string
	Created   time.Time
	// Spend is the conversation's measured spend (status.spendUSD), in USD.
	Spend string
	// SpendToday is the agent's cost today (UTC), in USD; "" when unknown.
	SpendToday string
	// WatchedBy are the monitor attachments watching this conversation.
	WatchedBy []Watcher
	// Link is the conversation page; AgentLink the agent's describe view.
	Link, AgentLink string
}

// ExecClass is the CSS class of the execution badge.
func (r fleetRow) ExecClass() string {
	if strings.HasPrefix(r.Execution, "WAITING") {
		return "state-WAITING"
	}
	return "state-" + r.Execution
}

// fleetDown is a supervisor whose rows are missing, and why.
type fleetDown struct{ Name, Err string }

// fleetTable is the filtered, paged table and its form.
type fleetTable struct {
	Filter      fleetFilter
	Supervisors []string
	States      []string
	Executions  []string
	Rows        []fleetRow
	Down        []fleetDown
	// Total counts the rows matching the filter; First is the 1-based index of Rows[0].
	Total, First, Last int
	// Query is the filter as a query string (for the live refresh); Prev and
	// Next are the neighbouring pages' queries ("" when there is none).
	Query, Prev, Next string
}

// fleetStates and fleetExecutions are the filter's choices.
var (
	fleetStates     = []string{"active", "paused", "archived", "pending", "none"}
	fleetExecutions = []string{"BUSY", "IDLE", "WAITING_FOR_INPUT", "STARTING", "EXITED"}
)

// watchedByFunc returns the monitors watching an agent (Server.WatchedBy).
type watchedByFunc func(sup, namespace, agent string) []Watcher

// buildFleetTable turns the supervisors' snapshots into the table's rows
// matching f, in fleet order, then namespace, agent and newest conversation;
// watchedBy (nil: none) gives each row its "watched by" badges.
func buildFleetTable(snaps []fleetSnapshot, f fleetFilter, now time.Time, watchedBy watchedByFunc) fleetTable {
	t := fleetTable{Filter: f, States: fleetStates, Executions: fleetExecutions, Query: f.query(f.Page)}
	var rows []fleetRow
	for _, sn := range snaps {
		name := sn.Supervisor.Name
		t.Supervisors = append(t.Supervisors, name)
		if f.Supervisor != "" && f.Supervisor != name {
			continue
		}
		if sn.Err != nil {
			_, msg := ErrorMessage(sn.Err)
			t.Down = append(t.Down, fleetDown{Name: name, Err: msg})
			continue
		}
		rows = append(rows, supervisorRows(sn, f, now, watchedBy)...)
	}
	t.Total = len(rows)
	start := f.Page * fleetPageRows
	if start > len(rows) {
		start = len(rows)
	}
	end := min(start+fleetPageRows, len(rows))
	t.Rows = rows[start:end]
	t.First, t.Last = start+1, end
	if f.Page > 0 {
		t.Prev = f.query(f.Page - 1)
		if t.Prev == "" {
			t.Prev = "page=0"
		}
	}
	if end < len(rows) {
		t.Next = f.query(f.Page + 1)
	}
	return t
}

// supervisorRows are one supervisor's rows matching f.
func supervisorRows(sn fleetSnapshot, f fleetFilter, now time.Time, watchedBy watchedByFunc) []fleetRow {
	sup := sn.Supervisor.Name
	convs := map[string][]unstructured.Unstructured{} // by namespace/agent
	for _, c := range sn.Conversations {
		agent, _, _ := unstructured.NestedString(c.Object, "spec", "agentRef")
		k := c.GetNamespace() + "/" + agent
		convs[k] = append(convs[k], c)
	}
	agents := append([]unstructured.Unstructured(nil), sn.Agents...)
	known := map[string]bool{}
	for _, a := range agents {
		known[a.GetNamespace()+"/"+a.GetName()] = true
	}
	// Conversations whose agent is gone still show.
	for k, cs := range convs {
		if !known[k] {
			ns, name, _ := strings.Cut(k, "/")
			a := unstructured.Unstructured{Object: map[string]any{}}
			a.SetNamespace(ns)
			a.SetName(name)
			a.SetCreationTimestamp(cs[0].GetCreationTimestamp())
			agents = append(agents, a)
		}
	}
	sort.Slice(agents, func(i, j int) bool {
		if agents[i].GetNamespace() != agents[j].GetNamespace() {
			return agents[i].GetNamespace() < agents[j].GetNamespace()
		}
		return agents[i].GetName() < agents[j].GetName()
	})
	agentText := strings.ToLower(strings.TrimSpace(f.Agent))
	var rows []fleetRow
	for _, a := range agents {
		ns, name := a.GetNamespace(), a.GetName()
		if agentText != "" && !strings.Contains(strings.ToLower(name), agentText) {
			continue
		}
		base := fleetRow{Supervisor: sup, Namespace: ns, Agent: name, AgentLink: describeLink(sup, "agents", ns, name)}
		if sn.SpendToday != nil {
			base.SpendToday = fmt.Sprintf("%.2f", sn.SpendToday[ns+"/"+name])
		}
		var watchers []Watcher
		if watchedBy != nil {
			watchers = watchedBy(sup, ns, name)
		}
		cs := convs[ns+"/"+name]
		if len(cs) == 0 {
			if (f.State == "" || f.State == "none") && f.Execution == "" {
				r := base
				r.Created = a.GetCreationTimestamp().Time
				r.Age = age(now, r.Created)
				rows = append(rows, r)
			}
			continue
		}
		sort.Slice(cs, func(i, j int) bool {
			return cs[j].GetCreationTimestamp().Time.Before(cs[i].GetCreationTimestamp().Time)
		})
		for _, c := range cs {
			r := base
			r.Conversation = c.GetName()
			r.State, _, _ = unstructured.NestedString(c.Object, "status", "state")
			if r.State == "" {
				r.State = "Pending"
			}
			if r.State == "Active" {
				r.Execution, _, _ = unstructured.NestedString(c.Object, "status", "execution")
			}
			if f.State != "" && !strings.EqualFold(f.State, r.State) || f.Execution != "" && f.Execution != r.Execution {
				continue
			}
			r.Spend, _, _ = unstructured.NestedString(c.Object, "status", "spendUSD")
			r.Created = c.GetCreationTimestamp().Time
			r.Age = age(now, r.Created)
			for _, w := range watchers {
				if w.Conversation == "" || w.Conversation == r.Conversation {
					r.WatchedBy = append(r.WatchedBy, w)
				}
			}
			r.Link = conversationLink(sup, ns, r.Conversation)
			rows = append(rows, r)
		}
	}
	return rows
}

func age(now, t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return duration.HumanDuration(now.Sub(t))
}

// PageRows is the page size, for the pager's links.
func (fleetTable) PageRows() int { return fleetPageRows }
