package console

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"time"

	"aicli.dev/aicli/internal/client"
	"aicli.dev/aicli/internal/console/auth"
	"aicli.dev/aicli/internal/console/fleet"
	"aicli.dev/aicli/internal/console/state"
)

// Config is how aicli-console runs.
type Config struct {
	// Listen is the HTTP address (default 127.0.0.1:8080).
	Listen string
	// DataDir holds the state file (console.json).
	DataDir string
	// Supervisors, when set, replace the stored list (and are stored).
	// Neither set: the local supervisor's default socket.
	Supervisors []state.Supervisor
	// Password, when set, becomes the console password.
	Password string
	// Out receives the start-up lines (URL, a generated password).
	Out    io.Writer
	Logger *slog.Logger
	// HealthInterval is the period of the supervisors' health checks (default 5s).
	HealthInterval time.Duration
	// Ready is called with the listening address once it serves.
	Ready func(addr net.Addr)
	// TrustedProxies are the reverse proxies whose X-Forwarded-For, -Proto
	// and -Host are believed (--trusted-proxy).
	TrustedProxies auth.Proxies
	// SecureCookies decides the cookies' Secure attribute (--secure-cookies,
	// default auto).
	SecureCookies auth.CookieMode
}

// Run serves the consoles until ctx ends.
func Run(ctx context.Context, cfg Config) error {
	if cfg.Listen == "" {
		cfg.Listen = "127.0.0.1:8080"
	}
	if cfg.Out == nil {
		cfg.Out = io.Discard
	}
	st, err := state.Open(cfg.DataDir)
	if err != nil {
		return err
	}
	if len(cfg.Supervisors) > 0 {
		if err := st.Update(func(d *state.Data) { d.Supervisors = cfg.Supervisors }); err != nil {
			return err
		}
	}
	sups := st.Get().Supervisors
	if len(sups) == 0 {
		sups = []state.Supervisor{{Name: "local", Server: client.DefaultServer()}}
	}
	f, err := fleet.New(sups)
	if err != nil {
		return err
	}
	f.Interval = cfg.HealthInterval
	a := &auth.Auth{State: st, Proxies: cfg.TrustedProxies, Cookies: cfg.SecureCookies, Logger: cfg.Logger}
	generated, err := a.EnsurePassword(cfg.Password)
	if err != nil {
		return err
	}
	srv := &Server{Fleet: f, Auth: a, State: st, Logger: cfg.Logger}
	h, err := srv.Handler()
	if err != nil {
		return err
	}
	f.CheckAll(ctx)
	go f.Run(ctx)
	ln, err := net.Listen("tcp", cfg.Listen)
	if err != nil {
		return fmt.Errorf("--listen %s: %w", cfg.Listen, err)
	}
	if generated != "" {
		fmt.Fprintf(cfg.Out, "aicli-console: console password (shown once, stored hashed in %s): %s\n", st.Path(), generated)
	}
	fmt.Fprintf(cfg.Out, "aicli-console: serving http://%s/ (end-user console) and http://%s/manage (Manager)\n", ln.Addr(), ln.Addr())
	hs := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(ln) }()
	if cfg.Ready != nil {
		cfg.Ready(ln.Addr())
	}
	select {
	case <-ctx.Done():
	case err := <-errc:
		if !errors.Is(err, http.ErrServerClosed) {
			return err
		}
	}
	shutdown, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = hs.Shutdown(shutdown)
	return nil
}
