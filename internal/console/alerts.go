package console

import (
	"context"
	"net/http"
	"net/url"
	"sort"
	"strings"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/runtime"

	"aicli.dev/aicli/apis/v1alpha1"
	"aicli.dev/aicli/internal/console/auth"
)

// Alert is a tripped monitor breaker, shown at the top of every Manager page
// with its re-arm button.
type Alert struct {
	Supervisor, Namespace, Name string
	Reason                      string
	Link                        string
	CSRF                        string
}

// maxAlerts bounds the banner: a fleet-wide storm shows the first ones and
// links to the monitors page for the rest.
const maxAlerts = 10

// attachmentsTTL is how long a fleet-wide list of attachments serves the
// pages' banner and "watched by" badges. The live partials, asked for on
// each watch event, want a list begun after they arrived.
const attachmentsTTL = 3 * time.Second

// supAttachments is one supervisor's monitor attachments, or why they could
// not be listed.
type supAttachments struct {
	Supervisor string
	Items      []v1alpha1.MonitorAttachment
	Err        error
}

// attachmentCache holds the last fleet-wide list of monitor attachments:
// every Manager page renders the banner, so it must not cost a list each time.
type attachmentCache struct {
	mu      sync.Mutex
	started time.Time // when the cached list began
	sups    []supAttachments
	// watchers indexes sups by target for WatchedBy.
	watchers map[watchKey][]Watcher
}

// watchKey is a watched agent: on a configured supervisor ("sup:NAME") or at
// a remote target's address ("addr:URL").
type watchKey struct{ where, namespace, agent string }

// attachments returns every supervisor's monitor attachments as listed by a
// list begun at or after notBefore: the cached one, else a new one (one list
// per supervisor, in parallel, bounded by listTimeout). Lists are made one at
// a time, so the pages refreshing on one watch event share at most two.
func (s *Server) attachments(ctx context.Context, notBefore time.Time) []supAttachments {
	c := &s.attachCache
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.sups != nil && !c.started.Before(notBefore) {
		return c.sups
	}
	started := time.Now()
	var out []supAttachments
	for _, l := range s.listAll(ctx, "monitorattachments", "") {
		sa := supAttachments{Supervisor: l.Supervisor.Name, Err: l.Err}
		for _, u := range l.Items {
			var a v1alpha1.MonitorAttachment
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &a); err != nil {
				sa.Err = err
				break
			}
			sa.Items = append(sa.Items, a)
		}
		sort.Slice(sa.Items, func(i, j int) bool {
			a, b := sa.Items[i], sa.Items[j]
			return a.Namespace+"/"+a.Name < b.Namespace+"/"+b.Name
		})
		out = append(out, sa)
	}
	c.sups, c.started, c.watchers = out, started, indexWatchers(out)
	return out
}

// recentAttachments is attachments no older than attachmentsTTL.
func (s *Server) recentAttachments(ctx context.Context) []supAttachments {
	return s.attachments(ctx, time.Now().Add(-attachmentsTTL))
}

// forgetAttachments drops the cache (after a change made through the console).
func (s *Server) forgetAttachments() {
	s.attachCache.mu.Lock()
	s.attachCache.sups = nil
	s.attachCache.mu.Unlock()
}

// alerts returns the tripped breakers of the fleet (at most maxAlerts).
func (s *Server) alerts(ctx context.Context, csrf string) []Alert {
	return s.alertsOf(s.recentAttachments(ctx), csrf)
}

func (s *Server) alertsOf(sups []supAttachments, csrf string) []Alert {
	var out []Alert
	for _, sa := range sups {
		for _, a := range sa.Items {
			if a.Status.TrippedAt == nil {
				continue
			}
			if len(out) == maxAlerts {
				return out
			}
			out = append(out, Alert{Supervisor: sa.Supervisor, Namespace: a.Namespace, Name: a.Name,
				Reason: a.Status.TrippedReason, Link: monitorAnchor(sa.Supervisor, a.Namespace, a.Name), CSRF: csrf})
		}
	}
	return out
}

// monitorAnchor links to an attachment's row on the monitors page.
func monitorAnchor(sup, ns, name string) string {
	return "/manage/monitors#" + attachmentID(sup, ns, name)
}

// attachmentID is the HTML id of an attachment's row.
func attachmentID(sup, ns, name string) string {
	return "ma-" + url.PathEscape(sup) + "-" + ns + "-" + name
}

// alertsPartial answers GET /manage/alerts: the banner alone, from a list
// begun after the request (the layout asks for it on each watch event).
func (s *Server) alertsPartial(w http.ResponseWriter, r *http.Request) {
	s.partial(w, "", "alerts", s.alertsOf(s.attachments(r.Context(), time.Now()), csrfOf(r)))
}

// csrfOf returns the CSRF token of the request's session.
func csrfOf(r *http.Request) string {
	if sess := auth.FromContext(r.Context()); sess != nil {
		return sess.CSRF
	}
	return ""
}

// Watcher is a monitor watching an agent, for the "watched by" badges.
type Watcher struct {
	// Name is the attachment (and usually the monitor agent) name.
	Name, Monitor string
	// Conversation is set when the attachment watches one conversation only.
	Conversation string
	Mode         v1alpha1.MonitorMode
	Tripped      bool
	// Link is the attachment's row on the monitors page.
	Link string
}

// WatchedBy returns the monitors attached to agent namespace/name homed on
// supervisor sup: attachments on sup with a local target, and attachments on
// any supervisor whose remote target is sup's address. It is for the pages'
// "watched by" badges (template "watchedBy" in layout.html renders them) and
// costs a map lookup: it reads the list the banner shares.
func (s *Server) WatchedBy(ctx context.Context, sup, namespace, agent string) []Watcher {
	s.recentAttachments(ctx)
	c := &s.attachCache
	c.mu.Lock()
	defer c.mu.Unlock()
	out := c.watchers[watchKey{"sup:" + sup, namespace, agent}]
	if server := s.supervisorServer(sup); server != "" {
		out = append(out[:len(out):len(out)], c.watchers[watchKey{"addr:" + strings.TrimSuffix(server, "/"), namespace, agent}]...)
	}
	return out
}

// supervisorServer returns the configured address of supervisor name.
func (s *Server) supervisorServer(name string) string {
	if sup := s.Fleet.Get(name); sup != nil {
		return sup.Server
	}
	return ""
}

func indexWatchers(sups []supAttachments) map[watchKey][]Watcher {
	out := map[watchKey][]Watcher{}
	for _, sa := range sups {
		for _, a := range sa.Items {
			t := a.Spec.Target
			k := watchKey{"sup:" + sa.Supervisor, a.Namespace, t.Agent}
			if rs := t.Supervisor; rs != nil {
				k.where = "addr:" + strings.TrimSuffix(rs.Address, "/")
				if rs.Namespace != "" {
					k.namespace = rs.Namespace
				}
			}
			out[k] = append(out[k], Watcher{Name: a.Name, Monitor: a.Spec.Monitor, Conversation: t.Conversation,
				Mode: a.Spec.Mode, Tripped: a.Status.TrippedAt != nil, Link: monitorAnchor(sa.Supervisor, a.Namespace, a.Name)})
		}
	}
	return out
}
