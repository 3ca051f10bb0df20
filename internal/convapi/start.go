package convapi

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"aicli.dev/aicli/apis/v1alpha1"
	"aicli.dev/aicli/internal/admission"
	"aicli.dev/aicli/internal/apischema"
	"aicli.dev/aicli/internal/apiserver"
)

// createAttempts bounds retries when a generated name is already taken.
const createAttempts = 3

// start is POST …/agents/{name}/start: it returns the agent's live
// conversation (200) or creates one (201).
func (a *API) start(w http.ResponseWriter, r *http.Request) {
	t, ok := a.resolve(w, r, http.MethodPost, agentsPlural)
	if !ok {
		return
	}
	if t.obj.GetDeletionTimestamp() != nil {
		apiserver.WriteError(w, apierrors.NewConflict(agentsGR, t.name,
			fmt.Errorf("agent %s is being deleted: no conversation can start", t.name)))
		return
	}
	conv, created, err := a.startOrContinue(r.Context(), t.ns, t.name)
	if err != nil {
		apiserver.WriteError(w, err)
		return
	}
	code := http.StatusOK
	if created {
		code = http.StatusCreated
		a.log.Info("conversation started", "namespace", t.ns, "agent", t.name, "conversation", conv.GetName())
	}
	body, err := conv.MarshalJSON()
	if err != nil {
		apiserver.WriteError(w, err)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_, _ = w.Write(body)
}

// startOrContinue returns the agent's live conversation, creating it when
// there is none. Starts are serialised here; the create itself goes through
// the API server, whose admission check (one live conversation per agent,
// serialised with every other conversation write) is the final arbiter: a
// conflict there means someone else's write won, and that conversation is
// returned instead.
func (a *API) startOrContinue(ctx context.Context, ns, agent string) (*unstructured.Unstructured, bool, error) {
	a.startMu.Lock()
	defer a.startMu.Unlock()
	if conv, err := a.liveConversation(ctx, ns, agent); err != nil || conv != nil {
		return conv, false, err
	}
	var lastErr error
	for range createAttempts {
		conv, err := a.createConversation(ctx, ns, agent)
		switch {
		case err == nil:
			return conv, true, nil
		case apierrors.IsAlreadyExists(err): // generated name collision: draw another
			lastErr = err
			continue
		case apierrors.IsConflict(err):
			live, lerr := a.liveConversation(ctx, ns, agent)
			if lerr != nil {
				return nil, false, lerr
			}
			if live != nil {
				return live, false, nil
			}
			return nil, false, err
		default:
			return nil, false, err
		}
	}
	return nil, false, lastErr
}

// liveConversation reads the agent's conversation that desires Active, or nil.
func (a *API) liveConversation(ctx context.Context, ns, agent string) (*unstructured.Unstructured, error) {
	name, err := admission.LiveConversation(ctx, a.opts.Store, ns, agent, "")
	if err != nil || name == "" {
		return nil, err
	}
	conv, err := a.opts.Store.Get(ctx, conversationsPlural, ns, name)
	if apierrors.IsNotFound(err) { // deleted in between: nothing live
		return nil, nil
	}
	return conv, err
}

// createConversation POSTs a new Active conversation for agent to the API
// server's own handler, with the caller's identity in ctx, so that decoding,
// defaults, validation and admission are exactly those of a plain create.
func (a *API) createConversation(ctx context.Context, ns, agent string) (*unstructured.Unstructured, error) {
	conv := map[string]any{
		"apiVersion": v1alpha1.GroupVersion.String(),
		"kind":       "Conversation",
		"metadata":   map[string]any{"generateName": agent + "-", "namespace": ns},
		"spec":       map[string]any{"agentRef": agent, "desiredState": string(v1alpha1.ConversationActive)},
	}
	return a.callAPI(ctx, http.MethodPost, apischema.APIPath+"/namespaces/"+ns+"/"+conversationsPlural, conv, http.StatusCreated)
}

// callAPI sends obj to the API server's own handler with the caller's identity in ctx (so that decoding,
// defaults, validation and admission are those of a plain request) and returns the object it answered.
func (a *API) callAPI(ctx context.Context, method, path string, obj map[string]any, want int) (*unstructured.Unstructured, error) {
	if a.api == nil {
		return nil, apierrors.NewServiceUnavailable("the conversation API is not registered with an API server")
	}
	body, err := json.Marshal(obj)
	if err != nil {
		return nil, fmt.Errorf("encoding %s %s: %w", method, path, err)
	}
	req, err := http.NewRequestWithContext(ctx, method, path, bytes.NewReader(body))
	if err != nil {
		return nil, fmt.Errorf("building %s %s: %w", method, path, err)
	}
	req.Header.Set("Content-Type", "application/json")
	rec := &recorder{header: http.Header{}}
	a.api.ServeHTTP(rec, req)
	if rec.code != want {
		return nil, decodeStatus(rec.code, rec.body.Bytes())
	}
	out := &unstructured.Unstructured{}
	if err := out.UnmarshalJSON(rec.body.Bytes()); err != nil {
		return nil, fmt.Errorf("decoding the reply of %s %s: %w", method, path, err)
	}
	return out, nil
}

// decodeStatus turns an error reply of the API server back into its StatusError.
func decodeStatus(code int, body []byte) error {
	var st metav1.Status
	if err := json.Unmarshal(body, &st); err != nil || st.Kind != "Status" {
		return apierrors.NewInternalError(fmt.Errorf("create conversation: HTTP %d: %s", code, bytes.TrimSpace(body)))
	}
	return &apierrors.StatusError{ErrStatus: st}
}

// recorder captures an in-process reply of the API server.
type recorder struct {
	header http.Header
	code   int
	body   bytes.Buffer
}

func (r *recorder) Header() http.Header { return r.header }

func (r *recorder) WriteHeader(code int) {
	if r.code == 0 {
		r.code = code
	}
}

func (r *recorder) Write(p []byte) (int, error) {
	if r.code == 0 {
		r.code = http.StatusOK
	}
	return r.body.Write(p)
}
