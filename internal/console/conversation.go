package console

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"aicli.dev/aicli/apis/v1alpha1"
	"aicli.dev/aicli/internal/client"
	"aicli.dev/aicli/internal/console/auth"
	"aicli.dev/aicli/internal/console/fleet"
	"aicli.dev/aicli/internal/convapi/wire"
	"aicli.dev/aicli/internal/transcript/transcriptwire"
)

// TranscriptPageSize is how many transcript entries a conversation page
// renders at first, and how many each "Load earlier" adds: a long transcript
// is never loaded whole.
const TranscriptPageSize = 100

// convView is what the conversation page (Manager and end user) renders.
type convView struct {
	Section                     string // "manage" or "user"
	Supervisor, Namespace, Name string
	Agent                       string
	Desired, State, Execution   string
	// Ready is the Ready condition's message when the conversation is not live.
	Ready string
	Live  bool
	Held  int32
	// Entries are the newest transcript entries, oldest first.
	Entries []entryView
	// Before is the cursor "Load earlier" pages back from; 0 when the first
	// entry is shown.
	Before int64
	// From is the last cursor shown: live entries follow from one past it.
	From int64
	CSRF string
}

// Base is the path of the conversation's actions and partials.
func (v *convView) Base() string {
	return "/conversations/" + url.PathEscape(v.Supervisor) + "/" + url.PathEscape(v.Namespace) + "/" + url.PathEscape(v.Name)
}

// Query is the supervisor, namespace and conversation as a query string
// (the live streams' parameters).
func (v *convView) Query() string {
	return url.Values{"supervisor": {v.Supervisor}, "namespace": {v.Namespace}, "conversation": {v.Name}}.Encode()
}

// WatchQuery watches the conversations of the namespace (state changes).
func (v *convView) WatchQuery() string {
	return url.Values{"resource": {"conversations"}, "supervisor": {v.Supervisor}, "namespace": {v.Namespace}}.Encode()
}

// ExecutionClass is the CSS class of the execution badge.
func (v *convView) ExecutionClass() string {
	return "state-" + strings.TrimSuffix(v.Execution, "_FOR_INPUT")
}

// entryView is one rendered transcript entry.
type entryView struct {
	Cursor  int64
	Class   string
	Speaker string
	Text    string
	Time    time.Time
}

// speakerKinds are the speaker prefixes with a style of their own.
var speakerKinds = map[string]bool{"human": true, "agent": true, "tool": true, "injected": true, "mail": true, "trigger": true,
	transcriptwire.SpeakerUnattributed: true}

// UnattributedLabel is how the consoles show an unattributed user turn: text
// in the CLI's own session store that nobody sent (the CLI wrote it).
const UnattributedLabel = "unattributed (written by the CLI)"

// speakerView returns the CSS class and label of a transcript speaker, as
// live.js's speakerClass and speakerLabel do for live entries.
func speakerView(speaker string) (class, label string) {
	kind, who, _ := strings.Cut(speaker, ":")
	class = "speaker-other"
	if speakerKinds[kind] {
		class = "speaker-" + kind
	}
	switch kind {
	case "injected":
		return class, "injected by monitor " + who
	case "mail":
		return class, "mail from " + who
	case "trigger":
		return class, "trigger " + who
	case transcriptwire.SpeakerUnattributed:
		return class, UnattributedLabel
	}
	return class, speaker
}

func entryViews(items []transcriptwire.Entry) []entryView {
	out := make([]entryView, 0, len(items))
	for _, e := range items {
		class, label := speakerView(e.Speaker)
		out = append(out, entryView{Cursor: e.Cursor, Class: class, Speaker: label, Text: e.Text, Time: e.Time})
	}
	return out
}

// fillConversation sets v's state fields from the conversation object.
func (v *convView) fillConversation(obj *unstructured.Unstructured) {
	v.Name = obj.GetName()
	v.Agent, _, _ = unstructured.NestedString(obj.Object, "spec", "agentRef")
	v.Desired, _, _ = unstructured.NestedString(obj.Object, "spec", "desiredState")
	if v.Desired == "" {
		v.Desired = string(v1alpha1.ConversationActive)
	}
	v.State, _, _ = unstructured.NestedString(obj.Object, "status", "state")
	v.Execution, _, _ = unstructured.NestedString(obj.Object, "status", "execution")
	held, _, _ := unstructured.NestedInt64(obj.Object, "status", "heldMessages")
	v.Held = int32(held)
	if c, ok := client.FindCondition(obj, v1alpha1.ConditionReady); ok {
		v.Live = c.Status == "True" && obj.GetDeletionTimestamp() == nil
		if !v.Live {
			v.Ready = c.Message
		}
	}
}

// stateView is the view of conversation obj's state for a request.
func stateView(r *http.Request, section string, sup *fleet.Supervisor, ns string, obj *unstructured.Unstructured) *convView {
	v := &convView{Section: section, Supervisor: sup.Name, Namespace: ns}
	if sess := auth.FromContext(r.Context()); sess != nil {
		v.CSRF = sess.CSRF
	}
	v.fillConversation(obj)
	return v
}

// conversationView reads conversation ns/name and the last page of its
// transcript.
func (s *Server) conversationView(ctx context.Context, r *http.Request, section string, sup *fleet.Supervisor, ns, name string) (*convView, error) {
	obj, err := sup.Client.Get(ctx, "conversations", ns, name)
	if err != nil {
		return nil, err
	}
	v := stateView(r, section, sup, ns, obj)
	page, err := sup.Client.TranscriptBefore(ctx, ns, name, 0, TranscriptPageSize)
	if err != nil {
		return nil, fmt.Errorf("reading the transcript of %s: %w", name, err)
	}
	v.Entries = entryViews(page.Items)
	v.Before = page.PrevCursor
	v.From = page.NextCursor - 1
	return v, nil
}

// conversationTarget resolves the {supervisor}/{namespace}/{name} of a request.
func (s *Server) conversationTarget(r *http.Request) (*fleet.Supervisor, string, string, error) {
	sup, err := s.supervisor(r.PathValue("supervisor"))
	if err != nil {
		return nil, "", "", err
	}
	return sup, r.PathValue("namespace"), r.PathValue("name"), nil
}

// sectionOf is the console a partial is rendered for (?section=user or manage).
func sectionOf(r *http.Request) string {
	if r.FormValue("section") == "user" {
		return "user"
	}
	return "manage"
}

// managerConversation is the Manager's conversation page:
// GET /manage/conversations/{supervisor}/{namespace}/{name}.
func (s *Server) managerConversation(w http.ResponseWriter, r *http.Request) {
	sup, ns, name, err := s.conversationTarget(r)
	if err != nil {
		s.fail(w, r, "manage", err)
		return
	}
	v, err := s.conversationView(r.Context(), r, "manage", sup, ns, name)
	if err != nil {
		s.fail(w, r, "manage", err)
		return
	}
	s.render(w, http.StatusOK, "conversation", s.page(r, "manage", "fleet", "Conversation "+name, v))
}

// conversationEarlier is GET /conversations/{supervisor}/{namespace}/{name}/earlier?before=C:
// the page of entries just before cursor C, with the next "Load earlier" button.
func (s *Server) conversationEarlier(w http.ResponseWriter, r *http.Request) {
	sup, ns, name, err := s.conversationTarget(r)
	if err != nil {
		s.fail(w, r, "", err)
		return
	}
	before, err := strconv.ParseInt(r.FormValue("before"), 10, 64)
	if err != nil || before < 1 {
		s.fail(w, r, "", badRequest("before must be a transcript cursor (a positive number)"))
		return
	}
	page, err := sup.Client.TranscriptBefore(r.Context(), ns, name, before, TranscriptPageSize)
	if err != nil {
		s.fail(w, r, "", err)
		return
	}
	v := &convView{Section: sectionOf(r), Supervisor: sup.Name, Namespace: ns, Name: name,
		Entries: entryViews(page.Items), Before: page.PrevCursor}
	s.partial(w, "conversation", "earlier", v)
}

// conversationState is the watch-refreshed state partial:
// GET /conversations/{supervisor}/{namespace}/{name}/state.
func (s *Server) conversationState(w http.ResponseWriter, r *http.Request) {
	sup, ns, name, err := s.conversationTarget(r)
	if err != nil {
		s.fail(w, r, "", err)
		return
	}
	obj, err := sup.Client.Get(r.Context(), "conversations", ns, name)
	if err != nil {
		s.fail(w, r, "", err)
		return
	}
	v := stateView(r, sectionOf(r), sup, ns, obj)
	s.partial(w, "conversation", "state", v)
}

// conversationTerminal is the terminal partial (the end user's terminal
// view on demand): GET /conversations/{supervisor}/{namespace}/{name}/terminal.
func (s *Server) conversationTerminal(w http.ResponseWriter, r *http.Request) {
	sup, ns, name, err := s.conversationTarget(r)
	if err != nil {
		s.fail(w, r, "", err)
		return
	}
	s.partial(w, "conversation", "terminal", &convView{Section: sectionOf(r), Supervisor: sup.Name, Namespace: ns, Name: name})
}

// sendResult is the send box's answer.
type sendResult struct {
	OK   bool
	Held bool
	Msg  string
}

// conversationSend delivers the send box's text as one atomic message:
// POST /conversations/{supervisor}/{namespace}/{name}/send (field text).
// A message held by the agent's budget and a conversation that is not live
// are answered in the page, readably.
func (s *Server) conversationSend(w http.ResponseWriter, r *http.Request) {
	sup, ns, name, err := s.conversationTarget(r)
	if err != nil {
		s.fail(w, r, sectionOf(r), err)
		return
	}
	text := r.FormValue("text")
	if strings.TrimSpace(text) == "" {
		s.fail(w, r, sectionOf(r), badRequest("the message is empty: type something to send"))
		return
	}
	res, err := send(r.Context(), sup.Client, ns, name, text)
	switch {
	case err == nil:
	case apierrors.IsConflict(err):
		_, msg := ErrorMessage(err)
		res = sendResult{Msg: "Not sent: " + msg}
	default:
		s.fail(w, r, sectionOf(r), err)
		return
	}
	if r.Header.Get("HX-Request") == "" {
		back := r.FormValue("back")
		if !strings.HasPrefix(back, "/") || strings.HasPrefix(back, "//") {
			back = "/"
		}
		http.Redirect(w, r, back, http.StatusSeeOther)
		return
	}
	s.partial(w, "conversation", "sent", res)
}

// send posts text to the conversation's send subresource and reads whether
// the agent's budget held it.
func send(ctx context.Context, cl *client.Client, ns, name, text string) (sendResult, error) {
	body, err := json.Marshal(wire.SendRequest{Text: text})
	if err != nil {
		return sendResult{}, err
	}
	raw, err := cl.DoRaw(ctx, http.MethodPost, client.ResourcePath("conversations", ns, name, wire.SubSend), client.ContentTypeJSON, body)
	if err != nil {
		return sendResult{}, err
	}
	var resp wire.SendResponse
	_ = json.Unmarshal(raw, &resp)
	if resp.Held {
		return sendResult{OK: true, Held: true, Msg: "Held by the agent's budget: the message is stored and delivered, in order, " +
			"once the budget covers it."}, nil
	}
	return sendResult{OK: true, Msg: "Sent."}, nil
}

// desiredStates are the states a page may ask for, by console.
var desiredStates = map[string]map[string]bool{
	"manage": {"Active": true, "Paused": true, "Archived": true},
	"user":   {"Active": true, "Paused": true},
}

// conversationDesire pauses, resumes or archives the conversation:
// POST /conversations/{supervisor}/{namespace}/{name}/desired (field state).
func (s *Server) conversationDesire(w http.ResponseWriter, r *http.Request) {
	section := sectionOf(r)
	sup, ns, name, err := s.conversationTarget(r)
	if err != nil {
		s.fail(w, r, section, err)
		return
	}
	state := r.FormValue("state")
	if !desiredStates[section][state] {
		s.fail(w, r, section, badRequest("cannot set a conversation to %q here", state))
		return
	}
	patch, _ := json.Marshal(map[string]any{"spec": map[string]any{"desiredState": state}})
	obj, err := sup.Client.Patch(r.Context(), "conversations", ns, name, patch, client.WriteOptions{})
	if err != nil {
		s.fail(w, r, section, err)
		return
	}
	if r.Header.Get("HX-Request") == "" {
		back := "/manage/conversations/" + url.PathEscape(sup.Name) + "/" + url.PathEscape(ns) + "/" + url.PathEscape(name)
		if section == "user" {
			back = talkPath(sup.Name, ns, obj.GetName())
			if agent, _, _ := unstructured.NestedString(obj.Object, "spec", "agentRef"); agent != "" {
				back = talkPath(sup.Name, ns, agent)
			}
		}
		http.Redirect(w, r, back, http.StatusSeeOther)
		return
	}
	v := stateView(r, section, sup, ns, obj)
	s.partial(w, "conversation", "state", v)
}

// Back is the page the conversation's plain (no script) forms return to.
func (v *convView) Back() string {
	if v.Section == "user" {
		return talkPath(v.Supervisor, v.Namespace, v.Agent)
	}
	return "/manage/conversations/" + url.PathEscape(v.Supervisor) + "/" + url.PathEscape(v.Namespace) + "/" + url.PathEscape(v.Name)
}

// StartPath starts or continues the agent's conversation (the end user's chat view).
func (v *convView) StartPath() string { return talkPath(v.Supervisor, v.Namespace, v.Agent) + "/start" }

// desireButton is one pause/resume/archive button.
type desireButton struct {
	V            *convView
	State, Label string
}

// Desire is the button that sets desiredState to state.
func (v *convView) Desire(state, label string) desireButton {
	return desireButton{V: v, State: state, Label: label}
}
