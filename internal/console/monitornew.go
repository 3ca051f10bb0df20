package console

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/validation"

	"aicli.dev/aicli/apis/v1alpha1"
	"aicli.dev/aicli/internal/client"
)

// monitorForm is the one-form attach-monitor flow's values and errors.
type monitorForm struct {
	// Target is "supervisor/namespace/agent".
	Target, Name, Conversation, Keywords string
	Word, CaseSensitive, WatchOnly       bool
	Harness, Model                       string
	MaxHumanless, Wakes, WindowMinutes   string
	// Targets are the agents to choose from, grouped by supervisor.
	Targets []targetGroup
	// Harnesses are the CLIs a monitor may run.
	Harnesses []harnessOption
	// Error is the form's error (from the supervisor, or not tied to a field);
	// FieldErrors are keyed by the field's name.
	Error       string
	FieldErrors map[string]string
	CSRF        string
}

type targetGroup struct {
	Supervisor string
	Err        string
	Agents     []targetOption
}

type targetOption struct {
	Value, Label string
}

// isName reports whether s is a valid agent or conversation name (a DNS-1123 label, as the API requires).
func isName(s string) bool { return len(validation.IsDNS1123Label(s)) == 0 }

// monitorNewPage shows the attach-monitor form (GET /manage/monitors/new
// [?target=sup/ns/agent]). Choosing another target re-renders it with that
// agent's harness and model (retarget=1).
func (s *Server) monitorNewPage(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	f := formFromValues(q)
	if q.Get("retarget") != "" || (f.Target != "" && !q.Has("harness")) {
		f.Harness, f.Model = "", ""
		if sup, ns, agent, err := splitTarget(f.Target); err == nil {
			s.prefillFromTarget(r, &f, sup, ns, agent)
		}
		if f.Name == "" || q.Get("retarget") != "" {
			_, _, agent, _ := splitTarget(f.Target)
			f.Name = defaultMonitorName(agent)
		}
	}
	s.renderMonitorForm(w, r, http.StatusOK, &f)
}

// formFromValues reads the form's fields, with the breaker's defaults.
func formFromValues(v url.Values) monitorForm {
	f := monitorForm{Target: v.Get("target"), Name: strings.TrimSpace(v.Get("name")),
		Conversation: strings.TrimSpace(v.Get("conversation")), Keywords: v.Get("keywords"),
		Word: v.Get("match") == string(v1alpha1.MatchWord), CaseSensitive: v.Get("caseSensitive") != "",
		WatchOnly: v.Get("mode") == string(v1alpha1.MonitorWatchOnly), Harness: v.Get("harness"),
		Model: strings.TrimSpace(v.Get("model")), MaxHumanless: v.Get("maxHumanless"), Wakes: v.Get("wakes"),
		WindowMinutes: v.Get("windowMinutes"), FieldErrors: map[string]string{}}
	maxH, wakes, window := breakerLimits(v1alpha1.BreakerSpec{})
	if f.MaxHumanless == "" {
		f.MaxHumanless = strconv.Itoa(int(maxH))
	}
	if f.Wakes == "" {
		f.Wakes = strconv.Itoa(wakes)
	}
	if f.WindowMinutes == "" {
		f.WindowMinutes = strconv.Itoa(window)
	}
	return f
}

func defaultMonitorName(agent string) string {
	name := agent + "-monitor"
	if len(name) > 63 {
		name = strings.TrimRight(name[:63], "-")
	}
	return name
}

// prefillFromTarget sets the harness and model from the target agent.
func (s *Server) prefillFromTarget(r *http.Request, f *monitorForm, supName, ns, agent string) {
	sup, err := s.supervisor(supName)
	if err != nil {
		return
	}
	a, err := sup.Client.Get(r.Context(), "agents", ns, agent)
	if err != nil {
		_, msg := ErrorMessage(err)
		f.FieldErrors["target"] = msg
		return
	}
	f.Harness, _, _ = unstructured.NestedString(a.Object, "spec", "harness")
	f.Model, _, _ = unstructured.NestedString(a.Object, "spec", "model")
}

// splitTarget reads "supervisor/namespace/agent".
func splitTarget(t string) (sup, ns, agent string, err error) {
	parts := strings.Split(t, "/")
	if len(parts) != 3 || parts[1] == "" || parts[2] == "" {
		return "", "", "", errors.New("choose the agent to watch")
	}
	return parts[0], parts[1], parts[2], nil
}

func (s *Server) renderMonitorForm(w http.ResponseWriter, r *http.Request, status int, f *monitorForm) {
	f.CSRF, f.Harnesses = csrfOf(r), harnessOptions
	for _, l := range s.listAll(r.Context(), "agents", "") {
		g := targetGroup{Supervisor: l.Supervisor.Name}
		if l.Err != nil {
			_, g.Err = ErrorMessage(l.Err)
		}
		for _, a := range l.Items {
			g.Agents = append(g.Agents, targetOption{Value: l.Supervisor.Name + "/" + a.GetNamespace() + "/" + a.GetName(),
				Label: a.GetNamespace() + "/" + a.GetName()})
		}
		sort.Slice(g.Agents, func(i, j int) bool { return g.Agents[i].Label < g.Agents[j].Label })
		f.Targets = append(f.Targets, g)
	}
	s.render(w, status, "monitornew", s.page(r, "manage", "monitors", "Attach a monitor", f))
}

// createMonitor handles the form (POST /manage/monitors): it creates the
// monitor agent and its attachment with client.CreateMonitor, the code
// behind `aictl monitor create`, then shows the monitors page. Bad input
// re-renders the form with the errors next to the fields.
func (s *Server) createMonitor(w http.ResponseWriter, r *http.Request) {
	if err := r.ParseForm(); err != nil {
		s.fail(w, r, "manage", badRequest("reading the form: %v", err))
		return
	}
	f := formFromValues(r.PostForm)
	req, supName, ns := f.request()
	if len(f.FieldErrors) > 0 {
		s.renderMonitorForm(w, r, http.StatusUnprocessableEntity, &f)
		return
	}
	sup, err := s.supervisor(supName)
	if err != nil {
		f.FieldErrors["target"] = err.Error()
		s.renderMonitorForm(w, r, http.StatusUnprocessableEntity, &f)
		return
	}
	if _, err := sup.Client.CreateMonitor(r.Context(), ns, req); err != nil {
		status, msg := monitorErrorMessage(err)
		switch {
		case apierrors.IsAlreadyExists(err):
			f.FieldErrors["name"] = msg + ": pick another name"
		case strings.Contains(msg, "keyword"):
			f.FieldErrors["keywords"] = msg
		default:
			f.Error = msg
		}
		s.renderMonitorForm(w, r, status, &f)
		return
	}
	s.forgetAttachments()
	http.Redirect(w, r, "/manage/monitors?created="+url.QueryEscape(supName+"/"+ns+"/"+req.Name)+
		"#"+attachmentID(supName, ns, req.Name), http.StatusSeeOther)
}

// monitorErrorMessage says what client.CreateMonitor refused: the step and
// the server's message, or its own check of the request (422).
func monitorErrorMessage(err error) (int, string) {
	var me *client.MonitorError
	if !errors.As(err, &me) {
		var st apierrors.APIStatus
		if !errors.As(err, &st) {
			return http.StatusUnprocessableEntity, err.Error()
		}
		return ErrorMessage(err)
	}
	status, msg := ErrorMessage(me.Err)
	msg = me.Step + ": " + msg
	if len(me.Created) > 0 {
		msg += " (already created: " + strings.Join(me.Created, ", ") + ")"
	}
	if status < 500 {
		status = http.StatusUnprocessableEntity
	}
	return status, msg
}

// request turns the form into a client.MonitorRequest, recording what is
// wrong with each field in f.FieldErrors. The trigger itself (blank or
// duplicate keywords) is judged by client.CreateMonitor and the server.
func (f *monitorForm) request() (req client.MonitorRequest, sup, ns string) {
	sup, ns, agent, err := splitTarget(f.Target)
	if err != nil {
		f.FieldErrors["target"] = err.Error()
	}
	req = client.MonitorRequest{Name: f.Name, Target: agent, Conversation: f.Conversation,
		CaseSensitive: f.CaseSensitive, Harness: f.Harness, Model: f.Model, WatchOnly: f.WatchOnly}
	if !isName(f.Name) {
		f.FieldErrors["name"] = "a name is lower-case letters, digits and '-', starting and ending with a letter or digit, at most 63 characters"
	}
	if f.Conversation != "" && !isName(f.Conversation) {
		f.FieldErrors["conversation"] = "not a conversation name: leave it empty to watch every conversation of the target"
	}
	if strings.TrimSpace(f.Keywords) == "" {
		f.FieldErrors["keywords"] = "give at least one keyword (comma-separated)"
	} else {
		req.Keywords = strings.Split(f.Keywords, ",")
	}
	if f.Word {
		req.Match = v1alpha1.MatchWord
	}
	req.Breaker.MaxConsecutiveHumanless = int32(f.number("maxHumanless", f.MaxHumanless, 1000))
	req.Breaker.RateBackstop.Wakes = int32(f.number("wakes", f.Wakes, 10000))
	req.Breaker.RateBackstop.WindowMinutes = int32(f.number("windowMinutes", f.WindowMinutes, 1440))
	return req, sup, ns
}

// number parses a breaker threshold between 1 and most.
func (f *monitorForm) number(field, v string, most int) int {
	n, err := strconv.Atoi(strings.TrimSpace(v))
	if err != nil || n < 1 || n > most {
		f.FieldErrors[field] = fmt.Sprintf("a whole number from 1 to %d", most)
		return 0
	}
	return n
}
