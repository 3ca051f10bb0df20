package client

import (
	"os"
	"time"

	"aicli.dev/aicli/internal/layout"
)

// Environment variables read by FromEnv.
const (
	// EnvServer overrides the server address (unix:///path or https://host:port).
	EnvServer = "AICLI_SERVER"
	// EnvToken is the bearer token sent on HTTPS connections.
	EnvToken = "AICLI_TOKEN"
)

// DefaultTimeout bounds one non-streaming request when Config.Timeout is zero.
const DefaultTimeout = 30 * time.Second

// Config says how to reach a supervisor.
type Config struct {
	// Server is unix:///path/to/supervisor.sock or https://host:port.
	// Empty means DefaultServer().
	Server string
	// Token is the bearer token for HTTPS servers; the unix socket needs none.
	Token string
	// CAFile is a PEM bundle used to verify an HTTPS server's certificate.
	CAFile string
	// CAData is a PEM bundle used like CAFile (both may be set).
	CAData []byte
	// InsecureSkipVerify turns off verification of the HTTPS server's certificate.
	InsecureSkipVerify bool
	// Timeout bounds each non-streaming request; zero means DefaultTimeout,
	// a negative value means no bound. Watches are never bounded by it.
	Timeout time.Duration
}

// DefaultServer is the supervisor's default unix socket,
// unix://<data-dir>/supervisor.sock with the default data dir ~/.aicli.
func DefaultServer() string {
	return "unix://" + layout.Dir(layout.DefaultDataDir()).Socket()
}

// FromEnv returns a Config from AICLI_SERVER and AICLI_TOKEN, with the
// supervisor's defaults for what they leave unset.
func FromEnv() Config {
	cfg := Config{Server: os.Getenv(EnvServer), Token: os.Getenv(EnvToken)}
	if cfg.Server == "" {
		cfg.Server = DefaultServer()
	}
	return cfg
}
