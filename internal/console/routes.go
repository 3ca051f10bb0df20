package console

import (
	"net/http"

	"aicli.dev/aicli/internal/console/web"
)

// routes registers every page, partial, action and live stream. The
// consoles' pages live in one file each (fleet.go, conversation.go, …).
func (s *Server) routes() {
	m := s.mux
	m.Handle("GET /static/", http.StripPrefix("/static/", http.FileServerFS(web.Static())))
	m.Handle("GET /dist/", http.StripPrefix("/dist/", http.FileServerFS(web.Dist())))
	m.Handle("GET /favicon.ico", http.RedirectHandler("/static/favicon.svg", http.StatusMovedPermanently))
	m.HandleFunc("GET /login", s.loginPage)
	m.HandleFunc("POST /login", s.login)
	s.handle("POST /logout", s.logout)

	// Live streams (websockets).
	s.handle("GET /ws/watch", s.watchStream)
	s.handle("GET /ws/transcript", s.transcriptStream)
	s.handle("GET /ws/attach", s.attachStream)
	s.handle("GET /ws/health", s.healthStream)

	// The end-user console (MyLittleAgi).
	s.handle("GET /{$}", s.userHome)
	s.handle("GET /talk/{supervisor}/{namespace}/{agent}", s.talkPage)
	s.handle("POST /talk/{supervisor}/{namespace}/{agent}/start", s.talkStart)
	s.handle("GET /agents/table", s.userAgentsTable)
	s.handle("GET /agents/new", s.newAgentPage)
	s.handle("POST /agents/new", s.createAgent)
	s.handle("GET /settings", s.settingsPage)
	s.handle("POST /settings/alias", s.setAlias)

	// The conversation page's partials and actions (both consoles).
	s.handle("GET /conversations/{supervisor}/{namespace}/{name}/earlier", s.conversationEarlier)
	s.handle("GET /conversations/{supervisor}/{namespace}/{name}/state", s.conversationState)
	s.handle("GET /conversations/{supervisor}/{namespace}/{name}/terminal", s.conversationTerminal)
	s.handle("POST /conversations/{supervisor}/{namespace}/{name}/send", s.conversationSend)
	s.handle("POST /conversations/{supervisor}/{namespace}/{name}/desired", s.conversationDesire)

	// The Manager.
	s.handle("GET /manage", s.fleetPage)
	s.handle("GET /manage/fleet/table", s.fleetTablePartial)
	s.handle("GET /manage/fleet/supervisors", s.fleetSupervisorsPartial)
	s.handle("GET /manage/status", s.statusPage)
	s.handle("GET /manage/status/table", s.statusTablePartial)
	s.handle("GET /manage/describe/{supervisor}/{resource}/{namespace}/{name}", s.describePage)
	s.handle("GET /manage/conversations/{supervisor}/{namespace}/{name}", s.managerConversation)
	s.handle("GET /manage/alerts", s.alertsPartial)
	s.handle("GET /manage/monitors", s.monitorsPage)
	s.handle("GET /manage/monitors/table", s.monitorsTable)
	s.handle("GET /manage/monitors/new", s.monitorNewPage)
	s.handle("POST /manage/monitors", s.createMonitor)
	s.handle("POST /manage/monitors/rearm", s.rearm)
	s.handle("GET /manage/spend", s.spendPage)
}
