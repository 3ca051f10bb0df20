package console

import (
	"net/http"
	"sort"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// userAgent is one row of "my agents".
type userAgent struct {
	Supervisor, Namespace, Name string
	Harness, Model              string
}

type userHomeData struct {
	Agents []userAgent
	Errors []string
}

// userHome is MyLittleAgi's start page: my agents.
func (s *Server) userHome(w http.ResponseWriter, r *http.Request) {
	var d userHomeData
	for _, l := range s.listAll(r.Context(), "agents", "") {
		if l.Err != nil {
			_, msg := ErrorMessage(l.Err)
			d.Errors = append(d.Errors, msg)
			continue
		}
		for _, a := range l.Items {
			h, _, _ := unstructured.NestedString(a.Object, "spec", "harness")
			m, _, _ := unstructured.NestedString(a.Object, "spec", "model")
			d.Agents = append(d.Agents, userAgent{Supervisor: l.Supervisor.Name, Namespace: a.GetNamespace(), Name: a.GetName(),
				Harness: h, Model: m})
		}
	}
	sort.Slice(d.Agents, func(i, j int) bool { return d.Agents[i].Name < d.Agents[j].Name })
	s.render(w, http.StatusOK, "home", s.page(r, "user", "agents", "My agents", d))
}
