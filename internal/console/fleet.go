package console

import (
	"cmp"
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/duration"

	"aicli.dev/aicli/internal/client"
	"aicli.dev/aicli/internal/console/fleet"
	"aicli.dev/aicli/internal/supinfo/infowire"
)

// fleetSupervisor is one supervisor's health and capacity card.
type fleetSupervisor struct {
	Name, Server string
	Up           bool
	Err          string
	Since        time.Time
	// Info is the supervisor's info endpoint's reply; InfoErr why it is missing.
	Info    *infowire.Info
	InfoErr string
}

type fleetData struct {
	Supervisors []fleetSupervisor
	Table       fleetTable
}

// fleetPage is the Manager's start page: every supervisor's health and
// capacity, then one table of their agents and conversations (GET /manage).
func (s *Server) fleetPage(w http.ResponseWriter, r *http.Request) {
	f := parseFleetFilter(r.URL.Query())
	start := time.Now()
	snaps := s.fleetSnapshots(r.Context(), true)
	fetched := time.Now()
	d := fleetData{Table: buildFleetTable(snaps, f, time.Now(), s.watchedByFunc(r.Context())), Supervisors: supervisorCards(snaps)}
	// How long the supervisors took and how long the rows, for the browser's devtools and the benchmark.
	w.Header().Set("Server-Timing", fmt.Sprintf("fetch;dur=%.1f, rows;dur=%.1f", ms(fetched.Sub(start)), ms(time.Since(fetched))))
	s.render(w, http.StatusOK, "fleet", s.page(r, "manage", "fleet", "Fleet", d))
}

// watchedByFunc is WatchedBy bound to ctx.
func (s *Server) watchedByFunc(ctx context.Context) watchedByFunc {
	return func(sup, ns, agent string) []Watcher { return s.WatchedBy(ctx, sup, ns, agent) }
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// supervisorCards are the supervisors' health and capacity rows.
func supervisorCards(snaps []fleetSnapshot) []fleetSupervisor {
	var out []fleetSupervisor
	for _, sn := range snaps {
		h := sn.Supervisor.Health()
		fs := fleetSupervisor{Name: sn.Supervisor.Name, Server: sn.Supervisor.Server, Up: h.Up, Err: h.Err, Since: h.Since,
			Info: sn.Info}
		if sn.InfoErr != nil && h.Up { // a down supervisor's reason is in its health cell already
			_, fs.InfoErr = ErrorMessage(sn.InfoErr)
		}
		out = append(out, fs)
	}
	return out
}

// fleetSupervisorsPartial re-renders the supervisors' rows (GET
// /manage/fleet/supervisors, on health changes).
func (s *Server) fleetSupervisorsPartial(w http.ResponseWriter, r *http.Request) {
	snaps := make([]fleetSnapshot, len(s.Fleet.Supervisors))
	s.eachSupervisor(r.Context(), func(ctx context.Context, i int, sup *fleet.Supervisor) error {
		snaps[i].Info, snaps[i].InfoErr = sup.Client.Info(ctx)
		return nil
	})
	for i, sup := range s.Fleet.Supervisors {
		snaps[i].Supervisor = sup
	}
	s.partial(w, "fleet", "supervisors", supervisorCards(snaps))
}

// fleetTablePartial re-renders only the table (GET /manage/fleet/table, the
// live refresh on watch events).
func (s *Server) fleetTablePartial(w http.ResponseWriter, r *http.Request) {
	f := parseFleetFilter(r.URL.Query())
	t := buildFleetTable(s.fleetSnapshots(r.Context(), false), f, time.Now(), s.watchedByFunc(r.Context()))
	s.partial(w, "fleet", "table", t)
}

// fleetSnapshot is what one supervisor returned for the fleet page.
type fleetSnapshot struct {
	Supervisor    *fleet.Supervisor
	Info          *infowire.Info
	InfoErr       error
	Agents        []unstructured.Unstructured
	Conversations []unstructured.Unstructured
	// SpendToday is each agent's cost today in USD, by namespace/name (nil: unknown).
	SpendToday map[string]float64
	// Err is why the agents or conversations could not be listed.
	Err error
}

// fleetSnapshots reads every supervisor in parallel: agents, conversations,
// today's spend, and (withInfo) its info endpoint; and it refreshes the shared
// list of monitor attachments (alerts.go) for the badges. A supervisor that is
// down or fails gets Err and does not hold the others.
func (s *Server) fleetSnapshots(ctx context.Context, withInfo bool) []fleetSnapshot {
	out := make([]fleetSnapshot, len(s.Fleet.Supervisors))
	var agents, convs []Listed
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		agents, convs = s.listAgentsAndConversations(ctx)
	}()
	wg.Add(1)
	go func() {
		defer wg.Done()
		s.recentAttachments(ctx)
	}()
	wg.Add(1)
	go func() {
		defer wg.Done()
		// Why a supervisor is down comes from the lists; these are extras.
		s.eachSupervisor(ctx, func(ctx context.Context, i int, sup *fleet.Supervisor) error {
			out[i].SpendToday = s.spendToday(ctx, sup, time.Now())
			if withInfo {
				out[i].Info, out[i].InfoErr = sup.Client.Info(ctx)
			}
			return nil
		})
	}()
	wg.Wait()
	for i := range out {
		out[i].Supervisor = s.Fleet.Supervisors[i]
		a, c := agents[i], convs[i]
		out[i].Agents, out[i].Conversations = a.Items, c.Items
		out[i].Err = cmp.Or(a.Err, c.Err)
	}
	return out
}

// spendTodayTTL is how long one supervisor's spend of today is reused: it
// moves slowly and reading it costs the supervisor a scan of its agents'
// session files.
const spendTodayTTL = 30 * time.Second

// spendCache holds each supervisor's last spend-today reading (memory only).
type spendCache struct {
	mu sync.Mutex
	m  map[*fleet.Supervisor]spendReading
}

type spendReading struct {
	at    time.Time
	day   string
	costs map[string]float64
}

// spendToday returns the supervisor's spend of today (UTC) per agent
// (namespace/name), read at most every spendTodayTTL; nil when the
// supervisor does not serve it or it fails (the column shows "—").
func (s *Server) spendToday(ctx context.Context, sup *fleet.Supervisor, now time.Time) map[string]float64 {
	day := now.UTC().Format(time.DateOnly)
	c := &s.spend
	c.mu.Lock()
	r, ok := c.m[sup]
	c.mu.Unlock()
	if ok && r.day == day && now.Sub(r.at) < spendTodayTTL {
		return r.costs
	}
	costs := readSpendToday(ctx, sup, day)
	c.mu.Lock()
	if c.m == nil {
		c.m = map[*fleet.Supervisor]spendReading{}
	}
	c.m[sup] = spendReading{at: now, day: day, costs: costs}
	c.mu.Unlock()
	return costs
}

func readSpendToday(ctx context.Context, sup *fleet.Supervisor, day string) map[string]float64 {
	rep, err := sup.Client.SpendHistory(ctx, "", client.SpendOptions{Since: day})
	if err != nil {
		return nil
	}
	out := map[string]float64{}
	for _, a := range rep.Agents {
		for _, d := range a.Days {
			if d.Date != day {
				continue
			}
			for _, m := range d.Models {
				out[a.Namespace+"/"+a.Agent] += m.CostUSD
			}
		}
	}
	return out
}

// fleetFilter is the fleet table's GET form.
type fleetFilter struct {
	Supervisor string // a configured supervisor's name, or "" for all
	State      string // active, paused, archived, none (agents without conversations), or ""
	Agent      string // substring of the agent's name
	Execution  string // BUSY, IDLE, WAITING_FOR_INPUT, STARTING, EXITED, or ""
	Page       int    // 0-based page of fleetPageRows rows
}

// fleetPageRows is how many rows one page of the table shows.
const fleetPageRows = 200

func parseFleetFilter(q url.Values) fleetFilter {
	f := fleetFilter{Supervisor: q.Get("supervisor"), State: q.Get("state"), Agent: q.Get("agent"), Execution: q.Get("execution")}
	if p, err := strconv.Atoi(q.Get("page")); err == nil && p > 0 {
		f.Page = p
	}
	return f
}

// query is the filter as a query string, at page p.
func (f fleetFilter) query(p int) string {
	q := url.Values{}
	for k, v := range map[string]string{"supervisor": f.Supervisor, "state": f.State, "agent": f.Agent, "execution": f.Execution} {
		if v != "" {
			q.Set(k, v)
		}
	}
	if p > 0 {
		q.Set("page", strconv.Itoa(p))
	}
	return q.Encode()
}

// Uptime is the supervisor's uptime for people ("3h", "2d").
func (f fleetSupervisor) Uptime() string {
	if f.Info == nil {
		return ""
	}
	return duration.HumanDuration(time.Duration(f.Info.UptimeSeconds) * time.Second)
}

// CPU is the containers' summed CPU use (100% is one core).
func (f fleetSupervisor) CPU() string {
	if f.Info == nil {
		return ""
	}
	return fmt.Sprintf("%.0f%%", f.Info.Capacity.CPUPercent)
}

// Memory is the containers' summed memory use.
func (f fleetSupervisor) Memory() string {
	if f.Info == nil {
		return ""
	}
	return infowire.FormatBytes(f.Info.Capacity.MemoryBytes)
}

// Homes and Images are the disk use of agent homes and guest images ("" when not reported).
func (f fleetSupervisor) Homes() string {
	if f.Info == nil || f.Info.Capacity.Disk == nil {
		return ""
	}
	return infowire.FormatBytes(f.Info.Capacity.Disk.HomesBytes)
}

func (f fleetSupervisor) Images() string {
	if f.Info == nil || f.Info.Capacity.Disk == nil {
		return ""
	}
	return infowire.FormatBytes(f.Info.Capacity.Disk.ImagesBytes)
}
