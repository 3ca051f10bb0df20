package convapi

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/watch"

	"aicli.dev/aicli/guest/ptyapi"
	"aicli.dev/aicli/internal/apiserver"
	"aicli.dev/aicli/internal/convapi/wire"
	"aicli.dev/aicli/internal/store"
	"aicli.dev/aicli/internal/transcript/transcriptwire"
)

// maxJSONSendBody bounds a JSON send body: the largest message with every
// byte escaped (\u00XX is 6 bytes) plus the envelope.
const maxJSONSendBody = 6*ptyapi.MaxMessageBytes + 1024

// send is POST …/conversations/{name}/send: one atomic message through the
// guest's SendMessage, answered 202 once the guest has accepted it, or once
// the agent's budget has held it durably (held: true; the conversation's
// reconciler delivers it when the budget covers it).
func (a *API) send(w http.ResponseWriter, r *http.Request) {
	t, ok := a.resolve(w, r, http.MethodPost, conversationsPlural)
	if !ok {
		return
	}
	text, speaker, err := readMessage(r, t.name)
	if err != nil {
		apiserver.WriteError(w, err)
		return
	}
	if monitor, ok := strings.CutPrefix(speaker, transcriptwire.SpeakerInjectedPrefix); ok {
		if err := a.authorizeMonitor(r.Context(), t, monitor); err != nil {
			apiserver.WriteError(w, err)
			return
		}
	}
	if budgetExhausted(t.obj) {
		apiserver.WriteError(w, exhaustedError(t))
		return
	}
	pty, err := a.livePTY(t)
	if err != nil {
		apiserver.WriteError(w, err)
		return
	}
	deliver, err := a.admit(r.Context(), t, speaker, text)
	if err != nil {
		apiserver.WriteError(w, err)
		return
	}
	if !deliver {
		apiserver.WriteJSON(w, http.StatusAccepted, wire.SendResponse{Accepted: true, Held: true})
		return
	}
	uid := string(t.obj.GetUID())
	if a.opts.Attribution != nil {
		a.opts.Attribution.Expect(uid, speaker, text)
	}
	if err := pty.SendMessage(r.Context(), text); err != nil {
		apiserver.WriteError(w, a.guestError(t, "send", err))
		return
	}
	a.awaitBusy(r.Context(), t)
	apiserver.WriteJSON(w, http.StatusAccepted, wire.SendResponse{Accepted: true})
}

// busyWait bounds how long an accepted send waits for the conversation's
// stored status to leave IDLE before answering anyway.
const busyWait = time.Second

// busyMarker is the live-guest registry's way to show an accepted message at once.
type busyMarker interface {
	MarkBusy(uid string)
}

// storeWatcher is the event store's watch.
type storeWatcher interface {
	Watch(ctx context.Context, resource, namespace string, opts store.WatchOptions) (watch.Interface, error)
}

// awaitBusy makes an accepted send visible before it is answered: the guest
// reports BUSY from the moment it accepts a message until the turn ends, and
// this waits (at most busyWait) until the conversation's stored status says
// so, so that a read right after the 202 never shows IDLE.
func (a *API) awaitBusy(ctx context.Context, t *target) {
	m, ok := a.opts.Sessions.(busyMarker)
	if !ok {
		return
	}
	m.MarkBusy(string(t.obj.GetUID()))
	sw, ok := a.opts.Store.(storeWatcher)
	if !ok {
		return
	}
	if exec, _, _ := unstructured.NestedString(t.obj.Object, "status", "execution"); exec != string(ptyapi.StatusIdle) {
		return // not IDLE now: no read can show an IDLE for this send
	}
	ctx, cancel := context.WithTimeout(ctx, busyWait)
	defer cancel()
	w, err := sw.Watch(ctx, conversationsPlural, t.ns, store.WatchOptions{ResourceVersion: t.obj.GetResourceVersion()})
	if err != nil {
		return
	}
	defer w.Stop()
	for {
		select {
		case <-ctx.Done():
			a.log.Warn("accepted message not yet shown as BUSY", "namespace", t.ns, "conversation", t.name, "waited", busyWait)
			return
		case ev, ok := <-w.ResultChan():
			if !ok {
				return
			}
			obj, isObj := ev.Object.(*unstructured.Unstructured)
			if !isObj || obj.GetName() != t.name || obj.GetUID() != t.obj.GetUID() {
				continue
			}
			if exec, _, _ := unstructured.NestedString(obj.Object, "status", "execution"); exec != string(ptyapi.StatusIdle) {
				return
			}
		}
	}
}

// readMessage reads the message text of a send request and its speaker: a
// JSON SendRequest, or the body itself for text/plain (spoken by human). A
// request naming a monitor is that monitor's advice (send authorizes the
// claim, authorizeMonitor): the text is transcriptwire.Advice and the
// speaker is injected:<monitor>. Too large (prefix
// included) is a 413, empty or a bad monitor name a 400, all before anything
// reaches the guest.
func readMessage(r *http.Request, name string) (text, speaker string, err error) {
	ct, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	limit := int64(maxJSONSendBody)
	plain := ct == "text/plain"
	if plain {
		limit = ptyapi.MaxMessageBytes
	} else if ct != "" && ct != "application/json" {
		return "", "", conversationError(http.StatusUnsupportedMediaType, metav1.StatusReasonUnsupportedMediaType, name,
			fmt.Sprintf("Content-Type %q is not supported: send application/json {\"text\": \"…\"} or text/plain", ct))
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, limit+1))
	if err != nil {
		return "", "", apierrors.NewBadRequest(fmt.Sprintf("reading request body: %v", err))
	}
	if int64(len(body)) > limit {
		return "", "", tooLarge(name)
	}
	text, speaker = string(body), transcriptwire.SpeakerHuman
	if !plain {
		var req wire.SendRequest
		dec := json.NewDecoder(strings.NewReader(text))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&req); err != nil {
			return "", "", conversationError(http.StatusBadRequest, metav1.StatusReasonBadRequest, name,
				fmt.Sprintf("send body must be {\"text\": \"…\"}: %v", err))
		}
		text = req.Text
		if req.Monitor != "" {
			if msgs := validation.IsDNS1123Label(req.Monitor); len(msgs) > 0 {
				return "", "", conversationError(http.StatusBadRequest, metav1.StatusReasonBadRequest, name,
					fmt.Sprintf("monitor %q: %s", req.Monitor, strings.Join(msgs, "; ")))
			}
			if strings.TrimSpace(text) != "" {
				text = transcriptwire.Advice(req.Monitor, text)
			}
			speaker = transcriptwire.SpeakerInjectedPrefix + req.Monitor
		}
	}
	if len(text) > ptyapi.MaxMessageBytes {
		return "", "", tooLarge(name)
	}
	if strings.TrimSpace(text) == "" {
		return "", "", conversationError(http.StatusBadRequest, metav1.StatusReasonBadRequest, name,
			fmt.Sprintf("conversation %s: the message is empty: nothing to send", name))
	}
	return text, speaker, nil
}

func tooLarge(name string) error {
	return conversationError(http.StatusRequestEntityTooLarge, metav1.StatusReasonRequestEntityTooLarge, name,
		fmt.Sprintf("conversation %s: the message exceeds %d bytes (the guest's limit); nothing was sent", name, ptyapi.MaxMessageBytes))
}
