package console

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"sort"
	"strconv"
	"sync"
	"time"

	"aicli.dev/aicli/internal/client"
	"aicli.dev/aicli/internal/console/fleet"
	"aicli.dev/aicli/internal/spend"
)

// spendBuckets are the four disjoint token buckets, in chart order.
var spendBuckets = []string{"uncached input", "cache read", "cache write", "output"}

func bucketValues(m spend.ModelSpend) [4]int64 {
	return [4]int64{m.UncachedInput, m.CacheRead, m.CacheWrite, m.Output}
}

// spendData is the spend page: the filter, two charts (by bucket, by
// model), totals per supervisor and per agent, and the live quota windows.
type spendData struct {
	// Filter: Supervisor "" is every one; Agent is "supervisor/namespace/agent" or "".
	Supervisor, Agent string
	Days              int
	Supervisors       []string
	AgentOptions      []targetOption
	// ByBucket and ByModel are data-chart specs (chart.js).
	ByBucket, ByModel string
	Empty             bool
	Rows              []spendRow // per supervisor
	AgentRows         []spendRow // per agent
	Quota             []quotaRow
	Unpriced          []string
	Errors            []string
}

// spendRow is one supervisor's or agent's totals over the period.
type spendRow struct {
	Supervisor, Namespace, Agent string
	Tokens                       [4]int64
	Total                        int64
	CostUSD                      float64
	// Partial is set when the cost leaves out unpriced models.
	Partial bool
}

// quotaRow is one agent's live quota windows.
type quotaRow struct {
	Supervisor, Namespace, Agent, Harness, ObservedAt string
	Windows                                           []quotaWindow
}

type quotaWindow struct {
	Name        string
	UsedPercent float64
	Minutes     int64
	ResetsAt    string
}

// supSpend is one supervisor's report, or why it has none.
type supSpend struct {
	sup *fleet.Supervisor
	rep *spend.Report
	err error
}

// spendDays are the periods the page offers.
var spendDays = []int{7, 30, 90}

// spendPage shows token spend per day (GET /manage/spend?supervisor=S&agent=S/NS/A&days=N).
func (s *Server) spendPage(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	d := spendData{Supervisor: q.Get("supervisor"), Agent: q.Get("agent"), Days: 30}
	if n, err := strconv.Atoi(q.Get("days")); err == nil && n >= 1 && n <= 366 {
		d.Days = n
	}
	var sups []*fleet.Supervisor
	agentNS, agentName := "", ""
	switch {
	case d.Agent != "":
		supName, ns, agent, err := splitTarget(d.Agent)
		if err != nil {
			s.fail(w, r, "manage", badRequest("agent: want supervisor/namespace/agent, got %q", d.Agent))
			return
		}
		sup, err := s.supervisor(supName)
		if err != nil {
			s.fail(w, r, "manage", err)
			return
		}
		sups, agentNS, agentName, d.Supervisor = []*fleet.Supervisor{sup}, ns, agent, sup.Name
	case d.Supervisor != "":
		sup, err := s.supervisor(d.Supervisor)
		if err != nil {
			s.fail(w, r, "manage", err)
			return
		}
		sups = []*fleet.Supervisor{sup}
	default:
		sups = s.Fleet.Supervisors
	}
	for _, sup := range s.Fleet.Supervisors {
		d.Supervisors = append(d.Supervisors, sup.Name)
	}
	now := time.Now().UTC()
	first := now.AddDate(0, 0, 1-d.Days)
	reports := s.spendReports(r.Context(), sups, agentNS, client.SpendOptions{Since: first.Format(time.DateOnly), Agent: agentName})
	d.fill(reports, first, now)
	d.AgentOptions = s.spendAgentOptions(reports, d.Agent)
	s.render(w, http.StatusOK, "spend", s.page(r, "manage", "spend", "Spend", d))
}

// spendReports asks each supervisor for its spend history, in parallel.
func (s *Server) spendReports(ctx context.Context, sups []*fleet.Supervisor, ns string, opts client.SpendOptions) []supSpend {
	out := make([]supSpend, len(sups))
	var wg sync.WaitGroup
	for i, sup := range sups {
		out[i].sup = sup
		if h := sup.Health(); !h.Up && !h.Checked.IsZero() {
			out[i].err = &UserError{Status: http.StatusServiceUnavailable, Msg: "supervisor " + sup.Name + " is down: " + h.Err}
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx, cancel := context.WithTimeout(ctx, 2*listTimeout)
			defer cancel()
			out[i].rep, out[i].err = sup.Client.SpendHistory(ctx, ns, opts)
		}()
	}
	wg.Wait()
	return out
}

// fill computes the charts and tables from the reports, over the days from
// first to last (UTC, both included).
func (d *spendData) fill(reports []supSpend, first, last time.Time) {
	var days []string
	var xs []int64
	for t := first; !t.After(last); t = t.AddDate(0, 0, 1) {
		day := t.Format(time.DateOnly)
		days = append(days, day)
		date, _ := time.Parse(time.DateOnly, day)
		xs = append(xs, date.Unix())
	}
	index := map[string]int{}
	for i, day := range days {
		index[day] = i
	}
	byBucket := make([][]int64, len(spendBuckets))
	for i := range byBucket {
		byBucket[i] = make([]int64, len(days))
	}
	byModel := map[string][]int64{}
	unpriced := map[string]bool{}
	for _, rs := range reports {
		if rs.err != nil {
			_, msg := ErrorMessage(rs.err)
			d.Errors = append(d.Errors, fmt.Sprintf("supervisor %s: %s", rs.sup.Name, msg))
			continue
		}
		for _, m := range rs.rep.UnpricedModels {
			unpriced[m] = true
		}
		row := spendRow{Supervisor: rs.sup.Name}
		for _, day := range rs.rep.Days {
			i, ok := index[day.Date]
			if !ok {
				continue
			}
			for _, m := range day.Models {
				v := bucketValues(m)
				if byModel[m.Model] == nil {
					byModel[m.Model] = make([]int64, len(days))
				}
				for b := range v {
					byBucket[b][i] = spend.SatAdd(byBucket[b][i], v[b])
					byModel[m.Model][i] = spend.SatAdd(byModel[m.Model][i], v[b])
				}
				row.add(m)
			}
		}
		d.Rows = append(d.Rows, row)
		for _, a := range rs.rep.Agents {
			ar := spendRow{Supervisor: rs.sup.Name, Namespace: a.Namespace, Agent: a.Agent}
			for _, day := range a.Days {
				if _, ok := index[day.Date]; ok {
					for _, m := range day.Models {
						ar.add(m)
					}
				}
			}
			if ar.Total > 0 {
				d.AgentRows = append(d.AgentRows, ar)
			}
		}
		for _, q := range rs.rep.Quota {
			qr := quotaRow{Supervisor: rs.sup.Name, Namespace: q.Namespace, Agent: q.Agent, Harness: string(q.Harness),
				ObservedAt: q.ObservedAt}
			for _, w := range []struct {
				name string
				w    *spend.QuotaWindow
			}{{"primary", q.Primary}, {"secondary", q.Secondary}} {
				if w.w != nil {
					qr.Windows = append(qr.Windows, quotaWindow{Name: w.name, UsedPercent: w.w.UsedPercent,
						Minutes: w.w.WindowMinutes, ResetsAt: w.w.ResetsAt})
				}
			}
			d.Quota = append(d.Quota, qr)
		}
	}
	sort.Slice(d.AgentRows, func(i, j int) bool { return d.AgentRows[i].Total > d.AgentRows[j].Total })
	for m := range unpriced {
		d.Unpriced = append(d.Unpriced, m)
	}
	sort.Strings(d.Unpriced)

	bucketSeries := make([]chartSeries, len(spendBuckets))
	for i, b := range spendBuckets {
		bucketSeries[i] = chartSeries{Label: b, Values: byBucket[i]}
	}
	models := make([]string, 0, len(byModel))
	for m := range byModel {
		models = append(models, m)
	}
	sort.Strings(models)
	modelSeries := make([]chartSeries, len(models))
	for i, m := range models {
		modelSeries[i] = chartSeries{Label: m, Values: byModel[m]}
	}
	d.Empty = len(models) == 0
	d.ByBucket = chartJSON(chartSpec{Title: "Tokens per day by bucket", Days: xs, Series: bucketSeries, Stacked: true, Unit: "tokens"})
	d.ByModel = chartJSON(chartSpec{Title: "Tokens per day by model", Days: xs, Series: modelSeries, Stacked: true, Unit: "tokens"})
}

func (r *spendRow) add(m spend.ModelSpend) {
	v := bucketValues(m)
	for b := range v {
		r.Tokens[b] = spend.SatAdd(r.Tokens[b], v[b])
		r.Total = spend.SatAdd(r.Total, v[b])
	}
	r.CostUSD += m.CostUSD
	if !m.Priced {
		r.Partial = true
	}
}

// spendAgentOptions lists the agents with spend (and the selected one) for the filter.
func (s *Server) spendAgentOptions(reports []supSpend, selected string) []targetOption {
	seen := map[string]bool{}
	var out []targetOption
	add := func(v string) {
		if v != "" && !seen[v] {
			seen[v] = true
			out = append(out, targetOption{Value: v, Label: v})
		}
	}
	add(selected)
	for _, rs := range reports {
		if rs.rep != nil {
			for _, a := range rs.rep.Agents {
				add(rs.sup.Name + "/" + a.Namespace + "/" + a.Agent)
			}
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Label < out[j].Label })
	return out
}

// chartSpec is what chart.js draws from a data-chart attribute.
type chartSpec struct {
	Title   string        `json:"title,omitempty"`
	Days    []int64       `json:"days"`
	Series  []chartSeries `json:"series"`
	Stacked bool          `json:"stacked,omitempty"`
	Unit    string        `json:"unit,omitempty"`
}

type chartSeries struct {
	Label  string  `json:"label"`
	Values []int64 `json:"values"`
}

func chartJSON(c chartSpec) string {
	raw, err := json.Marshal(c)
	if err != nil {
		return "{}"
	}
	return string(raw)
}
