package console

import (
	"context"
	"net/http"
	"slices"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"aicli.dev/aicli/apis/v1alpha1"
	"aicli.dev/aicli/internal/client"
	"aicli.dev/aicli/internal/console/fleet"
)

// userNamespace is the namespace the end-user console creates agents in.
const userNamespace = "default"

// harnessOption is one choice of the CLI select.
type harnessOption struct{ Value, Label string }

// harnessOptions are the four real CLIs, then the scripted fake CLI (for
// trying the console without a model account; the supervisors always
// accept it).
var harnessOptions = []harnessOption{
	{string(v1alpha1.HarnessClaude), "Claude Code"},
	{string(v1alpha1.HarnessCodex), "Codex CLI"},
	{string(v1alpha1.HarnessGemini), "Gemini CLI"},
	{string(v1alpha1.HarnessOpenCode), "OpenCode"},
	{string(v1alpha1.HarnessFake), "fake (scripted test CLI, no model)"},
}

// toolOption is a tool the supervisors offer: a ToolClass that admits the
// console's namespace.
type toolOption struct {
	Name, Usage string
	Checked     bool
	// def is the Grant's tool entry that references the class.
	def map[string]any
}

// newAgentForm is the create form's values and what went wrong.
type newAgentForm struct {
	Name, Harness, Model, Persona string
	Mail                          bool
	Harnesses                     []harnessOption
	Tools                         []toolOption
	Error                         string
}

// newAgentPage is the create form: GET /agents/new.
func (s *Server) newAgentPage(w http.ResponseWriter, r *http.Request) {
	f := &newAgentForm{Harness: string(v1alpha1.HarnessClaude), Mail: true, Harnesses: harnessOptions}
	f.Tools = s.knownTools(r.Context())
	s.render(w, http.StatusOK, "agent_new", s.page(r, "user", "new", "New agent", f))
}

// knownTools lists the ToolClasses of the reachable supervisors that admit
// the console's namespace, by name (the first of a name wins), sorted. A
// chosen one becomes a tool of the new agent's Grant that references it.
func (s *Server) knownTools(ctx context.Context) []toolOption {
	seen := map[string]bool{}
	var out []toolOption
	for _, l := range s.listAll(ctx, "toolclasses", "") {
		for _, c := range l.Items {
			name := c.GetName()
			namespaces, _, _ := unstructured.NestedStringSlice(c.Object, "spec", "namespaces")
			if seen[name] || (len(namespaces) > 0 && !slices.Contains(namespaces, userNamespace)) {
				continue
			}
			seen[name] = true
			usage, _, _ := unstructured.NestedString(c.Object, "spec", "usage")
			out = append(out, toolOption{Name: name, Usage: usage, def: map[string]any{"name": name, "className": name}})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// createAgent creates the agent from the form on the least loaded healthy
// supervisor, starts its first conversation there (retrying on the next
// supervisor when that launch fails) and opens its chat view:
// POST /agents/new.
func (s *Server) createAgent(w http.ResponseWriter, r *http.Request) {
	f := &newAgentForm{
		Name: strings.TrimSpace(r.FormValue("name")), Harness: r.FormValue("harness"),
		Model: strings.TrimSpace(r.FormValue("model")), Persona: r.FormValue("persona"),
		Mail: r.FormValue("mail") != "", Harnesses: harnessOptions,
	}
	f.Tools = s.knownTools(r.Context())
	chosen := map[string]bool{}
	for _, t := range r.Form["tool"] {
		chosen[t] = true
	}
	for i := range f.Tools {
		f.Tools[i].Checked = chosen[f.Tools[i].Name]
	}
	na, err := s.buildAgent(r.Context(), f)
	if err == nil {
		var sup *fleet.Supervisor
		var conv string
		sup, conv, err = s.placeAgent(r.Context(), placementOrder(s.candidates(r.Context())), na)
		if err == nil {
			s.log().Info("console: agent created", "agent", f.Name, "supervisor", sup.Name, "conversation", conv)
			http.Redirect(w, r, talkPath(sup.Name, userNamespace, f.Name), http.StatusSeeOther)
			return
		}
	}
	status, msg := ErrorMessage(err)
	f.Error = msg
	p := s.page(r, "user", "new", "New agent", f)
	s.render(w, status, "agent_new", p)
}

// buildAgent checks the form and builds the Agent and its Grant. The
// supervisors' own validation runs as a dry run on one of them, so that a
// bad value is reported before anything is created.
func (s *Server) buildAgent(ctx context.Context, f *newAgentForm) (newAgent, error) {
	switch {
	case f.Name == "":
		return newAgent{}, badRequest("Name: give the agent a name (lower-case letters, digits and dashes)")
	case !isName(f.Name):
		return newAgent{}, badRequest("Name: %q is not a valid name: use at most 63 lower-case letters, digits and dashes, "+
			"starting and ending with a letter or digit", f.Name)
	}
	valid := false
	for _, h := range harnessOptions {
		valid = valid || h.Value == f.Harness
	}
	if !valid {
		return newAgent{}, badRequest("CLI: choose one of the listed CLIs")
	}
	spec := map[string]any{"harness": f.Harness}
	if f.Model != "" {
		spec["model"] = f.Model
	}
	if strings.TrimSpace(f.Persona) != "" {
		spec["persona"] = f.Persona
	}
	if f.Mail {
		all := map[string]any{"all": true}
		spec["peers"] = map[string]any{"sendTo": all, "receiveFrom": all}
	}
	na := newAgent{Agent: &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": v1alpha1.GroupVersion.String(), "kind": "Agent",
		"metadata": map[string]any{"name": f.Name, "namespace": userNamespace},
		"spec":     spec,
	}}}
	var tools []any
	for _, t := range f.Tools {
		if t.Checked {
			tools = append(tools, t.def)
		}
	}
	if len(tools) > 0 {
		na.Grant = &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": v1alpha1.GroupVersion.String(), "kind": "Grant",
			"metadata": map[string]any{"name": f.Name + "-tools", "namespace": userNamespace},
			"spec":     map[string]any{"subject": f.Name, "tools": tools},
		}}
	}
	// The name must be free on every supervisor: "my agents" lists them all.
	for _, l := range s.listAll(ctx, "agents", userNamespace) {
		for _, a := range l.Items {
			if a.GetName() == f.Name {
				return newAgent{}, &UserError{Status: http.StatusConflict, Msg: "Name: you already have an agent named " + f.Name}
			}
		}
	}
	if healthy := s.Fleet.Healthy(); len(healthy) > 0 {
		if err := dryRun(ctx, healthy[0], na); err != nil {
			return newAgent{}, err
		}
	}
	return na, nil
}

// dryRun validates the new agent's objects on sup without storing them; a
// refusal is the user's to fix.
func dryRun(ctx context.Context, sup *fleet.Supervisor, na newAgent) error {
	for _, obj := range []*unstructured.Unstructured{na.Agent, na.Grant} {
		if obj == nil {
			continue
		}
		if _, err := sup.Client.Create(ctx, obj.DeepCopy(), client.WriteOptions{DryRun: true}); err != nil {
			status, msg := ErrorMessage(err)
			if status >= 500 {
				return err
			}
			return &UserError{Status: status, Msg: msg}
		}
	}
	return nil
}
