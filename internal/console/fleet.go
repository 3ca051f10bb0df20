package console

import (
	"net/http"
	"time"
)

// fleetSupervisor is one row of the fleet's supervisor table.
type fleetSupervisor struct {
	Name, Server string
	Up           bool
	Err          string
	Since        time.Time
}

type fleetData struct {
	Supervisors []fleetSupervisor
}

// fleetPage is the Manager's start page: every supervisor's health, its
// agents and conversations.
func (s *Server) fleetPage(w http.ResponseWriter, r *http.Request) {
	var d fleetData
	for _, sup := range s.Fleet.Supervisors {
		h := sup.Health()
		d.Supervisors = append(d.Supervisors, fleetSupervisor{Name: sup.Name, Server: sup.Server, Up: h.Up, Err: h.Err, Since: h.Since})
	}
	s.render(w, http.StatusOK, "fleet", s.page(r, "manage", "fleet", "Fleet", d))
}
