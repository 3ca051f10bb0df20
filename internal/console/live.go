package console

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/coder/websocket"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"aicli.dev/aicli/internal/client"
	"aicli.dev/aicli/internal/console/fleet"
	"aicli.dev/aicli/internal/convapi/wire"
	"aicli.dev/aicli/internal/transcript/transcriptwire"
)

// wsConn is an accepted websocket whose writes are serialised.
type wsConn struct {
	c  *websocket.Conn
	mu sync.Mutex
}

// accept upgrades the request, from the console's own origin only: the
// origin rule of every state-changing request (auth.SameOrigin, which knows
// a trusted proxy's X-Forwarded-Host and -Proto), and websocket.Accept's own
// check against that host.
func (s *Server) accept(w http.ResponseWriter, r *http.Request) (*wsConn, error) {
	if !s.Auth.SameOrigin(r) {
		http.Error(w, "refused: a live view must be opened from the console's own pages", http.StatusForbidden)
		return nil, errors.New("cross-origin websocket")
	}
	c, err := websocket.Accept(w, r, &websocket.AcceptOptions{OriginPatterns: []string{matchLiteral(s.Auth.Proxies.Host(r))}})
	if err != nil {
		return nil, err
	}
	return &wsConn{c: c}, nil
}

// matchLiteral escapes s as a path.Match pattern that matches only s (an
// IPv6 host has brackets).
func matchLiteral(s string) string {
	var b strings.Builder
	for _, r := range s {
		if strings.ContainsRune(`*?[]\`, r) {
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	return b.String()
}

// send writes v as one JSON text message.
func (c *wsConn) send(ctx context.Context, v any) error {
	raw, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return c.write(ctx, websocket.MessageText, raw)
}

// write writes one message, bounded so a stalled page cannot hold a relay.
func (c *wsConn) write(ctx context.Context, typ websocket.MessageType, data []byte) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	return c.c.Write(ctx, typ, data)
}

// closeWith ends the stream, telling the page why when err is set.
func (c *wsConn) closeWith(ctx context.Context, err error) {
	if err != nil {
		_, msg := ErrorMessage(err)
		_ = c.send(ctx, map[string]string{"error": msg})
		_ = c.c.Close(websocket.StatusPolicyViolation, truncate(msg, 120))
		return
	}
	_ = c.c.Close(websocket.StatusNormalClosure, "")
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n]
}

// readUntilClosed drains the browser's side of a send-only stream and
// cancels when it goes away.
func (c *wsConn) readUntilClosed(ctx context.Context) context.Context {
	return c.c.CloseRead(ctx)
}

// WatchEvent is what a watch stream sends to the page per change.
type WatchEvent struct {
	Supervisor string `json:"supervisor"`
	Type       string `json:"type"`
	Namespace  string `json:"namespace,omitempty"`
	Name       string `json:"name,omitempty"`
}

// watchable are the resources a page may follow.
var watchable = map[string]bool{"agents": true, "conversations": true, "monitorattachments": true, "grants": true}

// watchStream relays the watch of one resource (all namespaces unless
// namespace is set) of one supervisor, or of every configured supervisor:
// GET /ws/watch?resource=R[&supervisor=S][&namespace=N]. A supervisor that is
// down is re-watched once it is back; the page re-renders on each event.
func (s *Server) watchStream(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	resource, ns := q.Get("resource"), q.Get("namespace")
	if !watchable[resource] {
		http.Error(w, "resource "+strconv.Quote(resource)+" cannot be watched here", http.StatusBadRequest)
		return
	}
	sups := s.Fleet.Supervisors
	if name := q.Get("supervisor"); name != "" {
		sup, err := s.supervisor(name)
		if err != nil {
			s.fail(w, r, "", err)
			return
		}
		sups = []*fleet.Supervisor{sup}
	}
	c, err := s.accept(w, r)
	if err != nil {
		return
	}
	ctx := c.readUntilClosed(r.Context())
	var wg sync.WaitGroup
	for _, sup := range sups {
		wg.Add(1)
		go func() {
			defer wg.Done()
			relayWatch(ctx, c, sup, resource, ns)
		}()
	}
	wg.Wait()
	c.closeWith(context.Background(), nil)
}

func relayWatch(ctx context.Context, c *wsConn, sup *fleet.Supervisor, resource, ns string) {
	var backoff client.Backoff
	for ctx.Err() == nil {
		wi, err := sup.Client.Watch(ctx, resource, ns, client.ListOptions{})
		if err == nil {
			backoff.Reset()
			// Whatever changed while not watching: one event makes the page re-read.
			if c.send(ctx, WatchEvent{Supervisor: sup.Name, Type: "RESYNC"}) != nil {
				wi.Stop()
				return
			}
			for ev := range wi.ResultChan() {
				e := WatchEvent{Supervisor: sup.Name, Type: string(ev.Type)}
				if m, ok := ev.Object.(interface {
					GetNamespace() string
					GetName() string
				}); ok {
					e.Namespace, e.Name = m.GetNamespace(), m.GetName()
				}
				if c.send(ctx, e) != nil {
					wi.Stop()
					return
				}
			}
			wi.Stop()
		}
		if !backoff.Wait(ctx) {
			return
		}
	}
}

// transcriptStream relays a conversation's transcript as it is committed:
// GET /ws/transcript?supervisor=S&namespace=N&conversation=C&from=F. Each
// message is one transcriptwire.Entry (the page renders its text as text).
func (s *Server) transcriptStream(w http.ResponseWriter, r *http.Request) {
	sup, ns, name, ok := s.streamTarget(w, r)
	if !ok {
		return
	}
	from, _ := strconv.ParseInt(r.URL.Query().Get("from"), 10, 64)
	c, err := s.accept(w, r)
	if err != nil {
		return
	}
	ctx := c.readUntilClosed(r.Context())
	err = sup.Client.FollowTranscript(ctx, ns, name, from, func(e transcriptwire.Entry) error {
		return c.send(ctx, e)
	}, func(err error) bool {
		return !apierrors.IsNotFound(err) && !apierrors.IsForbidden(err) && !apierrors.IsUnauthorized(err)
	})
	c.closeWith(context.Background(), err)
}

// AttachControl is a text frame the page sends on /ws/attach: "control"
// takes (On) or releases control of the terminal, "resize" is forwarded as
// wire.ControlMessage while in control.
type AttachControl struct {
	Type string `json:"type"`
	On   bool   `json:"on,omitempty"`
	Cols int    `json:"cols,omitempty"`
	Rows int    `json:"rows,omitempty"`
}

// Attach control message types.
const (
	attachTakeControl = "control"
	attachResize      = wire.ControlTypeResize
)

// attachStream relays a conversation's attach websocket to the page:
// GET /ws/attach?supervisor=S&namespace=N&conversation=C. PTY output goes to
// the page as binary frames. The page's keystrokes (binary) and resizes are
// dropped unless it took control with {"type":"control","on":true}: the
// terminal is read-only by default, enforced here, not only in the page.
func (s *Server) attachStream(w http.ResponseWriter, r *http.Request) {
	sup, ns, name, ok := s.streamTarget(w, r)
	if !ok {
		return
	}
	c, err := s.accept(w, r)
	if err != nil {
		return
	}
	c.c.SetReadLimit(1 << 20)
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	up, err := sup.Client.DialAttach(ctx, ns, name)
	if err != nil {
		c.closeWith(context.Background(), err)
		return
	}
	defer up.CloseNow()
	done := make(chan string, 2)
	go func() { done <- relayOutput(ctx, up, c) }()
	go func() { done <- relayInput(ctx, c, up) }()
	reason := <-done
	cancel()
	_ = up.Close(websocket.StatusNormalClosure, "")
	_ = c.c.Close(websocket.StatusNormalClosure, truncate(reason, 120))
}

// relayOutput copies the supervisor's PTY output to the page until either
// side ends, and says why.
func relayOutput(ctx context.Context, up *websocket.Conn, page *wsConn) string {
	for {
		typ, data, err := up.Read(ctx)
		if err != nil {
			var ce websocket.CloseError
			if errors.As(err, &ce) && ce.Reason != "" {
				return ce.Reason
			}
			return "the conversation's terminal closed"
		}
		if typ != websocket.MessageBinary {
			continue
		}
		if page.write(ctx, websocket.MessageBinary, data) != nil {
			return "page gone"
		}
	}
}

// relayInput forwards the page's keystrokes and resizes while it holds
// control; everything else is dropped.
func relayInput(ctx context.Context, page *wsConn, up *websocket.Conn) string {
	control := false
	for {
		typ, data, err := page.c.Read(ctx)
		if err != nil {
			return "page gone"
		}
		if typ == websocket.MessageBinary {
			if !control {
				continue // read-only: keystrokes are dropped
			}
			if up.Write(ctx, websocket.MessageBinary, data) != nil {
				return "the conversation's terminal closed"
			}
			continue
		}
		var m AttachControl
		if json.Unmarshal(data, &m) != nil {
			continue
		}
		switch {
		case m.Type == attachTakeControl:
			control = m.On
		case m.Type == attachResize && control && m.Cols > 0 && m.Rows > 0:
			raw, _ := json.Marshal(wire.ControlMessage{Type: wire.ControlTypeResize, Cols: m.Cols, Rows: m.Rows})
			if up.Write(ctx, websocket.MessageText, raw) != nil {
				return "the conversation's terminal closed"
			}
		}
	}
}

// streamTarget reads a conversation stream's ?supervisor=S&namespace=N&conversation=C,
// answering a bad request itself.
func (s *Server) streamTarget(w http.ResponseWriter, r *http.Request) (*fleet.Supervisor, string, string, bool) {
	q := r.URL.Query()
	sup, err := s.supervisor(q.Get("supervisor"))
	if err != nil {
		s.fail(w, r, "", err)
		return nil, "", "", false
	}
	ns, name := q.Get("namespace"), q.Get("conversation")
	if ns == "" || name == "" {
		http.Error(w, "namespace and conversation are required", http.StatusBadRequest)
		return nil, "", "", false
	}
	return sup, ns, name, true
}

// healthStream sends one event each time a supervisor's health changes (and
// RESYNC on connect): GET /ws/health. Pages re-read what a supervisor going
// down or coming back changes; a down supervisor has no watch to say so.
func (s *Server) healthStream(w http.ResponseWriter, r *http.Request) {
	c, err := s.accept(w, r)
	if err != nil {
		return
	}
	ctx := c.readUntilClosed(r.Context())
	changed, cancel := s.Fleet.Subscribe()
	defer cancel()
	typ := "RESYNC"
	for {
		if c.send(ctx, WatchEvent{Type: typ}) != nil {
			return
		}
		typ = "HEALTH"
		select {
		case <-ctx.Done():
			c.closeWith(context.Background(), nil)
			return
		case <-changed:
		}
	}
}
