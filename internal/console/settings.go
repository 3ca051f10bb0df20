package console

import (
	"net/http"
	"sort"
	"strings"

	"aicli.dev/aicli/internal/console/fleet"
	"aicli.dev/aicli/internal/console/state"
)

// settingsSupervisor is one configured supervisor on the settings page.
type settingsSupervisor struct {
	Name, Server string
	fleet.Health
}

// settingsAgent is where one agent runs, and its alias.
type settingsAgent struct {
	Supervisor, Namespace, Name, Alias string
}

type settingsData struct {
	Supervisors []settingsSupervisor
	Agents      []settingsAgent
}

// settingsPage is the end-user console's settings: the configured
// supervisors with their health, and which one runs each agent (the only
// page that says so) with its display alias: GET /settings.
func (s *Server) settingsPage(w http.ResponseWriter, r *http.Request) {
	var d settingsData
	for _, sup := range s.Fleet.Supervisors {
		d.Supervisors = append(d.Supervisors, settingsSupervisor{Name: sup.Name, Server: sup.Server, Health: sup.Health()})
	}
	aliases := s.State.Get().Aliases
	for _, l := range s.listAll(r.Context(), "agents", "") {
		for _, a := range l.Items {
			d.Agents = append(d.Agents, settingsAgent{Supervisor: l.Supervisor.Name, Namespace: a.GetNamespace(), Name: a.GetName(),
				Alias: aliases[aliasKey(l.Supervisor.Name, a.GetNamespace(), a.GetName())]})
		}
	}
	sort.Slice(d.Agents, func(i, j int) bool { return d.Agents[i].Name < d.Agents[j].Name })
	s.render(w, http.StatusOK, "settings", s.page(r, "user", "settings", "Settings", d))
}

func aliasKey(supervisor, ns, agent string) string { return supervisor + "/" + ns + "/" + agent }

// setAlias stores (or, empty, removes) an agent's display alias:
// POST /settings/alias (fields supervisor, namespace, agent, alias).
func (s *Server) setAlias(w http.ResponseWriter, r *http.Request) {
	sup, err := s.supervisor(r.FormValue("supervisor"))
	if err != nil {
		s.fail(w, r, "user", err)
		return
	}
	ns, agent, alias := r.FormValue("namespace"), r.FormValue("agent"), strings.TrimSpace(r.FormValue("alias"))
	if ns == "" || agent == "" {
		s.fail(w, r, "user", badRequest("namespace and agent are required"))
		return
	}
	if len(alias) > 64 {
		s.fail(w, r, "user", badRequest("an alias has at most 64 characters"))
		return
	}
	err = s.State.Update(func(d *state.Data) {
		if d.Aliases == nil {
			d.Aliases = map[string]string{}
		}
		if alias == "" {
			delete(d.Aliases, aliasKey(sup.Name, ns, agent))
		} else {
			d.Aliases[aliasKey(sup.Name, ns, agent)] = alias
		}
	})
	if err != nil {
		s.fail(w, r, "user", err)
		return
	}
	http.Redirect(w, r, "/settings", http.StatusSeeOther)
}
