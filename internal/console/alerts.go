package console

import "context"

// Alert is a tripped monitor breaker, shown at the top of every Manager page
// with its re-arm button.
type Alert struct {
	Supervisor, Namespace, Name string
	Reason                      string
	Link                        string
	CSRF                        string
}

// alerts returns the tripped breakers of the fleet.
func (s *Server) alerts(ctx context.Context, csrf string) []Alert {
	return nil
}
