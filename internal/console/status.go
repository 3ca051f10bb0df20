package console

import (
	"context"
	"net/http"
	"slices"
	"sort"
	"strings"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"aicli.dev/aicli/apis/v1alpha1"
	"aicli.dev/aicli/internal/client"
	"aicli.dev/aicli/internal/console/fleet"
)

// statusRow is one object's reconcile status.
type statusRow struct {
	Supervisor, Resource, Kind, Namespace, Name string
	Generation, ObservedGeneration              int64
	// HasStatus is false for kinds without a status (no generation to compare).
	HasStatus  bool
	Conditions []metav1.Condition
	// Stalled: the Stalled condition is True (a user must act). Failing: Ready
	// is False (or, without Ready, another condition is), or the status lags
	// the spec's generation.
	Stalled, Failing bool
	Link             string
}

// Lagging reports whether the status describes an older generation.
func (r statusRow) Lagging() bool { return r.HasStatus && r.ObservedGeneration < r.Generation }

// Health is the row's summary word: Stalled, Failing or OK.
func (r statusRow) Health() string {
	switch {
	case r.Stalled:
		return "Stalled"
	case r.Failing:
		return "Failing"
	}
	return "OK"
}

type statusData struct {
	Rows      []statusRow
	Down      []fleetDown
	Resources []string
	// Watched are the kinds whose changes refresh the table live.
	Watched     []string
	Supervisors []string
	// Filter: supervisor, resource, failing only.
	Supervisor, Resource string
	FailingOnly          bool
	Total, Bad           int
	Query                string
}

// statusPage is the reconcile-status dashboard (GET /manage/status): every
// object of every kind the supervisors serve, with its conditions and
// generations, stalled then failing first; each row links to describe.
func (s *Server) statusPage(w http.ResponseWriter, r *http.Request) {
	d := s.statusData(r)
	s.render(w, http.StatusOK, "status", s.page(r, "manage", "status", "Reconcile status", d))
}

// statusTablePartial re-renders the dashboard's table on watch events.
func (s *Server) statusTablePartial(w http.ResponseWriter, r *http.Request) {
	s.partial(w, "status", "table", s.statusData(r))
}

func (s *Server) statusData(r *http.Request) statusData {
	q := r.URL.Query()
	d := statusData{Supervisor: q.Get("supervisor"), Resource: q.Get("resource"), FailingOnly: q.Get("failing") != "",
		Query: r.URL.RawQuery}
	res := map[string]bool{}
	for _, sup := range s.Fleet.Supervisors {
		d.Supervisors = append(d.Supervisors, sup.Name)
	}
	for _, st := range s.statusSnapshots(r.Context()) {
		if d.Supervisor != "" && st.sup.Name != d.Supervisor {
			continue
		}
		if st.err != nil {
			_, msg := ErrorMessage(st.err)
			d.Down = append(d.Down, fleetDown{Name: st.sup.Name, Err: msg})
			continue
		}
		for _, row := range st.rows {
			res[row.Resource] = true
			if d.Resource != "" && row.Resource != d.Resource {
				continue
			}
			d.Total++
			if row.Stalled || row.Failing {
				d.Bad++
			} else if d.FailingOnly {
				continue
			}
			d.Rows = append(d.Rows, row)
		}
	}
	for k := range res {
		d.Resources = append(d.Resources, k)
	}
	sort.Strings(d.Resources)
	for _, r := range d.Resources {
		if watchable[r] {
			d.Watched = append(d.Watched, r)
		}
	}
	sortStatusRows(d.Rows, d.Supervisors)
	return d
}

// sortStatusRows puts stalled rows first, then failing, then the rest, each
// in fleet order, resource, namespace and name.
func sortStatusRows(rows []statusRow, order []string) {
	rank := func(r statusRow) int {
		switch {
		case r.Stalled:
			return 0
		case r.Failing:
			return 1
		}
		return 2
	}
	sort.SliceStable(rows, func(i, j int) bool {
		a, b := rows[i], rows[j]
		if rank(a) != rank(b) {
			return rank(a) < rank(b)
		}
		if a.Supervisor != b.Supervisor {
			return slices.Index(order, a.Supervisor) < slices.Index(order, b.Supervisor)
		}
		if a.Resource != b.Resource {
			return a.Resource < b.Resource
		}
		if a.Namespace != b.Namespace {
			return a.Namespace < b.Namespace
		}
		return a.Name < b.Name
	})
}

type supervisorStatus struct {
	sup  *fleet.Supervisor
	rows []statusRow
	err  error
}

// statusSnapshots lists every kind in each supervisor's discovery, every
// supervisor and kind in parallel.
func (s *Server) statusSnapshots(ctx context.Context) []supervisorStatus {
	out := make([]supervisorStatus, len(s.Fleet.Supervisors))
	errs := s.eachSupervisor(ctx, func(ctx context.Context, i int, sup *fleet.Supervisor) error {
		var err error
		out[i].rows, err = supervisorStatusRows(ctx, sup)
		return err
	})
	for i, sup := range s.Fleet.Supervisors {
		out[i].sup, out[i].err = sup, errs[i]
	}
	return out
}

func supervisorStatusRows(ctx context.Context, sup *fleet.Supervisor) ([]statusRow, error) {
	disc, err := sup.Client.Discovery(ctx)
	if err != nil {
		return nil, err
	}
	hasStatus := map[string]bool{}
	var kinds []metav1.APIResource
	for _, r := range disc.APIResources {
		if base, sub, ok := strings.Cut(r.Name, "/"); ok {
			hasStatus[base] = hasStatus[base] || sub == "status"
			continue
		}
		if slices.Contains(r.Verbs, "list") {
			kinds = append(kinds, r)
		}
	}
	lists := make([][]statusRow, len(kinds))
	errs := make([]error, len(kinds))
	var wg sync.WaitGroup
	for i, k := range kinds {
		wg.Add(1)
		go func() {
			defer wg.Done()
			list, err := sup.Client.List(ctx, k.Name, "", client.ListOptions{})
			if err != nil {
				errs[i] = err
				return
			}
			for _, obj := range list.Items {
				lists[i] = append(lists[i], statusRowOf(sup.Name, k.Name, hasStatus[k.Name], &obj))
			}
		}()
	}
	wg.Wait()
	var rows []statusRow
	for i := range kinds {
		if errs[i] != nil {
			return nil, errs[i]
		}
		rows = append(rows, lists[i]...)
	}
	return rows, nil
}

// statusRowOf reads one object's conditions and generations.
func statusRowOf(sup, resource string, hasStatus bool, obj *unstructured.Unstructured) statusRow {
	row := statusRow{Supervisor: sup, Resource: resource, Kind: obj.GetKind(), Namespace: obj.GetNamespace(), Name: obj.GetName(),
		Generation: obj.GetGeneration(), HasStatus: hasStatus, Link: describeLink(sup, resource, obj.GetNamespace(), obj.GetName())}
	row.ObservedGeneration, _, _ = unstructured.NestedInt64(obj.Object, "status", "observedGeneration")
	conds, _, _ := unstructured.NestedSlice(obj.Object, "status", "conditions")
	var ready metav1.ConditionStatus // "" without a Ready condition
	anyFalse := false
	for _, c := range conds {
		m, ok := c.(map[string]any)
		if !ok {
			continue
		}
		var cond metav1.Condition
		if runtime.DefaultUnstructuredConverter.FromUnstructured(m, &cond) != nil {
			continue
		}
		row.Conditions = append(row.Conditions, cond)
		switch cond.Type {
		case v1alpha1.ConditionStalled:
			row.Stalled = cond.Status == metav1.ConditionTrue
		case v1alpha1.ConditionReconciling:
		case v1alpha1.ConditionReady:
			ready = cond.Status
			anyFalse = anyFalse || cond.Status == metav1.ConditionFalse
		default:
			anyFalse = anyFalse || cond.Status == metav1.ConditionFalse
		}
	}
	// Ready summarises the others: with Ready=True a False dependency is a
	// normal state (a paused conversation has no container), not a failure.
	row.Failing = anyFalse && ready != metav1.ConditionTrue
	if row.Lagging() {
		row.Failing = true
	}
	return row
}
