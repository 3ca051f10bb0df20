package console

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"

	"aicli.dev/aicli/apis/v1alpha1"
	"aicli.dev/aicli/internal/monitor/breaker"
)

// monitorRow is one MonitorAttachment on the monitors page.
type monitorRow struct {
	ID                          string
	Supervisor, Namespace, Name string
	Monitor                     string
	// MonitorLink describes the monitor agent; History the attachment (a trip shows there).
	MonitorLink, History string
	// Target is agent[/conversation]; Remote the target's supervisor address when it is elsewhere.
	Target, Remote string
	Mode           v1alpha1.MonitorMode
	Keywords       []string
	CaseSensitive  bool
	// Breaker: Tripped with its time and reason, the human-less count against
	// its maximum, the wakes in the backstop's window against its limit.
	Tripped                    bool
	TrippedAt                  time.Time
	TrippedReason              string
	Humanless, MaxHumanless    int32
	Wakes, MaxWakes, WindowMin int
	Ready                      string // "True", "False" or "Unknown"
	ReadyMessage               string
	Conversations              []monitorConversation
}

// monitorConversation is one watched target conversation and the monitor's
// conversation for it, each linking to its conversation page.
type monitorConversation struct {
	Target, TargetLink   string
	Monitor, MonitorLink string
	Cursor               int64
	Archived             bool
}

type monitorsData struct {
	Rows   []monitorRow
	Errors []string
	CSRF   string
	// Created names the attachment the form just created.
	Created string
}

// conversationLink is the Manager's page of a conversation (conversation.go).
func conversationLink(sup, ns, name string) string {
	return "/manage/conversations/" + url.PathEscape(sup) + "/" + ns + "/" + name
}

// describeLink is the Manager's describe/history view of an object.
func describeLink(sup, resource, ns, name string) string {
	return "/manage/describe/" + url.PathEscape(sup) + "/" + resource + "/" + ns + "/" + name
}

// monitorsPage lists every MonitorAttachment of the fleet (GET /manage/monitors).
func (s *Server) monitorsPage(w http.ResponseWriter, r *http.Request) {
	d := s.monitorsData(r, s.recentAttachments(r.Context()))
	d.Created = r.URL.Query().Get("created")
	s.render(w, http.StatusOK, "monitors", s.page(r, "manage", "monitors", "Monitors", d))
}

// monitorsTable is the table alone, from a list begun after the request (GET /manage/monitors/table,
// asked for by the page on each monitorattachments watch event).
func (s *Server) monitorsTable(w http.ResponseWriter, r *http.Request) {
	s.partial(w, "monitors", "monitorsTable", s.monitorsData(r, s.attachments(r.Context(), time.Now())))
}

func (s *Server) monitorsData(r *http.Request, sups []supAttachments) monitorsData {
	d := monitorsData{CSRF: csrfOf(r)}
	for _, sa := range sups {
		if sa.Err != nil {
			_, msg := ErrorMessage(sa.Err)
			d.Errors = append(d.Errors, fmt.Sprintf("supervisor %s: %s", sa.Supervisor, msg))
			continue
		}
		for i := range sa.Items {
			d.Rows = append(d.Rows, s.monitorRow(sa.Supervisor, &sa.Items[i]))
		}
	}
	return d
}

func (s *Server) monitorRow(sup string, a *v1alpha1.MonitorAttachment) monitorRow {
	st := &a.Status
	row := monitorRow{ID: attachmentID(sup, a.Namespace, a.Name), Supervisor: sup, Namespace: a.Namespace, Name: a.Name,
		Monitor: a.Spec.Monitor, MonitorLink: describeLink(sup, "agents", a.Namespace, a.Spec.Monitor),
		History: describeLink(sup, "monitorattachments", a.Namespace, a.Name),
		Target:  a.Spec.Target.Agent, Mode: a.Spec.Mode, CaseSensitive: a.Spec.Trigger.CaseSensitive,
		Tripped: !breaker.Closed(st), TrippedReason: st.TrippedReason, Humanless: st.ConsecutiveHumanless,
		Wakes: int(st.Wakes), Ready: conditionStatus(st, v1alpha1.ConditionReady)}
	if row.Mode == "" {
		row.Mode = v1alpha1.MonitorAdvise
	}
	if a.Spec.Target.Conversation != "" {
		row.Target += "/" + a.Spec.Target.Conversation
	}
	if st.TrippedAt != nil {
		row.TrippedAt = st.TrippedAt.Time
	}
	if c := meta.FindStatusCondition(st.Conditions, v1alpha1.ConditionReady); c != nil && c.Status != "True" {
		row.ReadyMessage = c.Message
	}
	row.MaxHumanless, row.MaxWakes, row.WindowMin = breakerLimits(a.Spec.Breaker)
	for _, k := range a.Spec.Trigger.Keywords {
		kw := k.Text
		if k.Mode == v1alpha1.MatchWord {
			kw += " (word)"
		}
		row.Keywords = append(row.Keywords, kw)
	}
	// The target's conversations live on the target's supervisor: this one, or
	// a configured one with the remote address (else they are not linked).
	targetSup, targetNS := sup, a.Namespace
	if rs := a.Spec.Target.Supervisor; rs != nil {
		row.Remote, targetSup = rs.Address, s.supervisorNamed(rs.Address)
		if rs.Namespace != "" {
			targetNS = rs.Namespace
		}
	}
	for _, mc := range st.Conversations {
		c := monitorConversation{Target: mc.Target, Monitor: mc.Monitor, Cursor: mc.Cursor, Archived: mc.Archived}
		if targetSup != "" {
			c.TargetLink = conversationLink(targetSup, targetNS, mc.Target)
		}
		if mc.Monitor != "" {
			c.MonitorLink = conversationLink(sup, a.Namespace, mc.Monitor)
		}
		row.Conversations = append(row.Conversations, c)
	}
	return row
}

// breakerLimits are the breaker's thresholds with the API's defaults filled in.
func breakerLimits(b v1alpha1.BreakerSpec) (maxHumanless int32, wakes, windowMinutes int) {
	maxHumanless, wakes, windowMinutes = breaker.DefaultMaxConsecutiveHumanless, breaker.DefaultBackstopWakes,
		int(breaker.DefaultBackstopWindow/time.Minute)
	if b.MaxConsecutiveHumanless > 0 {
		maxHumanless = b.MaxConsecutiveHumanless
	}
	if b.RateBackstop.Wakes > 0 {
		wakes = int(b.RateBackstop.Wakes)
	}
	if b.RateBackstop.WindowMinutes > 0 {
		windowMinutes = int(b.RateBackstop.WindowMinutes)
	}
	return maxHumanless, wakes, windowMinutes
}

func conditionStatus(st *v1alpha1.MonitorAttachmentStatus, typ string) string {
	if c := meta.FindStatusCondition(st.Conditions, typ); c != nil {
		return string(c.Status)
	}
	return "Unknown"
}

// supervisorNamed returns the name of the configured supervisor serving at
// address, or "".
func (s *Server) supervisorNamed(address string) string {
	for _, sup := range s.Fleet.Supervisors {
		if strings.TrimSuffix(sup.Server, "/") == strings.TrimSuffix(address, "/") {
			return sup.Name
		}
	}
	return ""
}

// rearm closes a tripped breaker through the API's rearm subresource
// (POST /manage/monitors/rearm: supervisor, namespace, name), as `aictl
// monitor rearm` does. htmx gets the refreshed banner; a plain form post is
// sent back to the monitors page.
func (s *Server) rearm(w http.ResponseWriter, r *http.Request) {
	supName, ns, name := r.PostFormValue("supervisor"), r.PostFormValue("namespace"), r.PostFormValue("name")
	if ns == "" || name == "" {
		s.fail(w, r, "manage", badRequest("re-arm: namespace and name of the monitor attachment are required"))
		return
	}
	sup, err := s.supervisor(supName)
	if err != nil {
		s.fail(w, r, "manage", err)
		return
	}
	if _, _, err := sup.Client.RearmMonitor(r.Context(), ns, name); err != nil {
		s.fail(w, r, "manage", err)
		return
	}
	s.forgetAttachments()
	if r.Header.Get("HX-Request") != "" {
		s.alertsPartial(w, r)
		return
	}
	http.Redirect(w, r, monitorAnchor(sup.Name, ns, name), http.StatusSeeOther)
}
