// Package fleet is the console's view of its supervisors: one API client
// each, their health (checked in the background, so a page never waits on a
// supervisor that is down), and the placement of new agents.
package fleet

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"aicli.dev/aicli/internal/client"
	"aicli.dev/aicli/internal/console/state"
)

// Health is what the last check of a supervisor found.
type Health struct {
	// Up is true when /readyz answered ok.
	Up bool
	// Err says why it is not up.
	Err string
	// Checked is when it was checked; Since when Up last changed.
	Checked, Since time.Time
}

// Supervisor is one configured supervisor.
type Supervisor struct {
	Name   string
	Server string
	Client *client.Client

	mu     sync.Mutex
	health Health
}

// Health returns the last check's result.
func (s *Supervisor) Health() Health {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.health
}

// Fleet is the configured supervisors, in order.
type Fleet struct {
	Supervisors []*Supervisor
	// Interval is the period of the health checks (default 5s).
	Interval time.Duration

	mu   sync.Mutex
	subs map[chan struct{}]bool
}

// New opens a client per configured supervisor.
func New(cfgs []state.Supervisor) (*Fleet, error) {
	if len(cfgs) == 0 {
		return nil, fmt.Errorf("no supervisor configured")
	}
	f := &Fleet{subs: map[chan struct{}]bool{}}
	seen := map[string]bool{}
	for _, c := range cfgs {
		cfg := client.Config{Server: c.Server, CAFile: c.CAFile}
		if c.TokenFile != "" {
			tok, err := os.ReadFile(c.TokenFile)
			if err != nil {
				return nil, fmt.Errorf("supervisor %s: token file: %w", c.Name, err)
			}
			cfg.Token = strings.TrimSpace(string(tok))
		}
		cl, err := client.New(cfg)
		if err != nil {
			return nil, fmt.Errorf("supervisor %s: %w", c.Name, err)
		}
		if seen[c.Name] {
			return nil, fmt.Errorf("two supervisors are named %q: name them apart (NAME=ADDR)", c.Name)
		}
		seen[c.Name] = true
		f.Supervisors = append(f.Supervisors, &Supervisor{Name: c.Name, Server: c.Server, Client: cl})
	}
	return f, nil
}

// DefaultName names a supervisor by its address: "local" for the default
// socket, the socket's directory for another socket, host:port for https.
func DefaultName(server string) string {
	if server == client.DefaultServer() {
		return "local"
	}
	u, err := url.Parse(server)
	if err != nil {
		return server
	}
	if u.Scheme == "unix" {
		return filepath.Base(filepath.Dir(u.Path))
	}
	return u.Host
}

// ParseFlag reads --supervisor entries: [NAME=]ADDR.
func ParseFlag(entries []string) []state.Supervisor {
	var out []state.Supervisor
	for _, e := range entries {
		if e = strings.TrimSpace(e); e == "" {
			continue
		}
		name, addr, ok := strings.Cut(e, "=")
		if !ok || strings.Contains(name, "/") || strings.Contains(name, ":") {
			name, addr = DefaultName(e), e
		}
		out = append(out, state.Supervisor{Name: name, Server: addr})
	}
	return out
}

// Get returns the supervisor named name, or nil.
func (f *Fleet) Get(name string) *Supervisor {
	for _, s := range f.Supervisors {
		if s.Name == name {
			return s
		}
	}
	return nil
}

// Run checks every supervisor's health until ctx ends.
func (f *Fleet) Run(ctx context.Context) {
	interval := f.Interval
	if interval <= 0 {
		interval = 5 * time.Second
	}
	for {
		f.CheckAll(ctx)
		select {
		case <-ctx.Done():
			return
		case <-time.After(interval):
		}
	}
}

// CheckAll checks every supervisor now, in parallel.
func (f *Fleet) CheckAll(ctx context.Context) {
	var wg sync.WaitGroup
	changed := false
	var mu sync.Mutex
	for _, s := range f.Supervisors {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if s.check(ctx) {
				mu.Lock()
				changed = true
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if changed {
		f.notify()
	}
}

// check asks /readyz with a short bound; it reports whether Up changed.
func (s *Supervisor) check(ctx context.Context) bool {
	ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	_, err := s.Client.DoRaw(ctx, "GET", "/readyz", "", nil)
	now := time.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	was := s.health.Up
	s.health.Checked = now
	s.health.Up, s.health.Err = err == nil, ""
	if err != nil {
		s.health.Err = err.Error()
	}
	if was != s.health.Up || s.health.Since.IsZero() {
		s.health.Since = now
		return true
	}
	return false
}

// Subscribe returns a channel that receives (coalesced) when some
// supervisor's health changed, and its cancel.
func (f *Fleet) Subscribe() (<-chan struct{}, func()) {
	ch := make(chan struct{}, 1)
	f.mu.Lock()
	f.subs[ch] = true
	f.mu.Unlock()
	return ch, func() {
		f.mu.Lock()
		delete(f.subs, ch)
		f.mu.Unlock()
	}
}

func (f *Fleet) notify() {
	f.mu.Lock()
	defer f.mu.Unlock()
	for ch := range f.subs {
		select {
		case ch <- struct{}{}:
		default:
		}
	}
}

// Healthy returns the supervisors whose last check found them up.
func (f *Fleet) Healthy() []*Supervisor {
	var out []*Supervisor
	for _, s := range f.Supervisors {
		if s.Health().Up {
			out = append(out, s)
		}
	}
	return out
}
