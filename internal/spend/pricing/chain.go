package pricing

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"time"

	"aicli.dev/aicli/internal/spend"
)

// Defaults for a Chain.
const (
	DefaultURL          = "https://openrouter.ai/api/v1/models"
	DefaultRefresh      = 24 * time.Hour
	DefaultTimeout      = 10 * time.Second
	DefaultEagerBackoff = 10 * time.Minute
)

// PricingFile is a source label for a table read from an explicit file.
const PricingFile = "file"

// Chain is the ModelPricingSource: live fetch → last good table cached durably → bundled table.
type Chain struct {
	// URL is the models list endpoint.
	URL string
	// Client performs the fetch (default: a client with Timeout).
	Client *http.Client
	// CachePath is the durable last-good table; empty disables the durable cache.
	CachePath string
	// Offline forbids live fetches (the cached or bundled table answers).
	Offline bool
	// Refresh is how old the cached table may get before a refetch (default 24h).
	Refresh time.Duration
	// Timeout bounds one fetch (default 10s).
	Timeout time.Duration
	// EagerBackoff is the least time between eager refreshes triggered by unknown models (default 10m).
	EagerBackoff time.Duration
	// Now is the clock (default time.Now).
	Now func() time.Time

	mu          sync.Mutex
	loaded      bool
	cached      *cacheFile
	lastAttempt time.Time
	bundled     Table
}

var _ spend.ModelPricingSource = (*Chain)(nil)

// cacheFile is the durable last-good table.
type cacheFile struct {
	FetchedAt time.Time `json:"fetchedAt"`
	URL       string    `json:"url"`
	Models    Table     `json:"models"`
}

func (c *Chain) now() time.Time {
	if c.Now != nil {
		return c.Now()
	}
	return time.Now()
}

func (c *Chain) load() {
	if c.loaded {
		return
	}
	c.loaded = true
	c.bundled = Bundled()
	if c.CachePath == "" {
		return
	}
	b, err := os.ReadFile(c.CachePath)
	if err != nil {
		return
	}
	var f cacheFile
	if json.Unmarshal(b, &f) == nil && len(f.Models) > 0 {
		c.cached = &f
	}
}

func (c *Chain) store(f *cacheFile) error {
	if c.CachePath == "" {
		return nil
	}
	b, err := json.Marshal(f)
	if err != nil {
		return fmt.Errorf("pricing: encode cache: %w", err)
	}
	return WriteFileAtomic(c.CachePath, b)
}

// Prices implements spend.ModelPricingSource.
func (c *Chain) Prices(ctx context.Context, models []string) (spend.Pricing, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.load()
	now := c.now()
	refresh := c.Refresh
	if refresh <= 0 {
		refresh = DefaultRefresh
	}
	fresh := c.cached != nil && now.Sub(c.cached.FetchedAt) < refresh
	unknown := false
	for _, m := range models {
		if c.cached == nil || !hasModel(c.cached.Models, m) {
			unknown = true
			break
		}
	}
	backoff := c.EagerBackoff
	if backoff <= 0 {
		backoff = DefaultEagerBackoff
	}
	reason := ""
	switch {
	case c.Offline:
		reason = "offline: live fetch disabled"
	case !fresh || (unknown && now.Sub(c.lastAttempt) >= backoff):
		c.lastAttempt = now
		t, err := c.fetch(ctx)
		if err == nil {
			c.cached = &cacheFile{FetchedAt: now, URL: c.url(), Models: t}
			fresh = true
			if err := c.store(c.cached); err != nil {
				reason = err.Error()
			}
		} else if !fresh {
			reason = err.Error()
		}
	}
	out := spend.Pricing{Rates: map[string]spend.Rates{}, FallbackReason: reason}
	switch {
	case fresh && !c.Offline:
		out.Source = spend.PricingLive
	case c.cached != nil:
		out.Source = spend.PricingCache
	default:
		out.Source = spend.PricingBundled
	}
	for _, m := range models {
		slug := Normalize(m)
		if c.cached != nil {
			if r, ok := c.cached.Models[slug]; ok {
				out.Rates[m] = r
				continue
			}
		}
		if r, ok := c.bundled[slug]; ok {
			out.Rates[m] = r
		}
	}
	return out, nil
}

func hasModel(t Table, raw string) bool {
	_, ok := t[Normalize(raw)]
	return ok
}

func (c *Chain) url() string {
	if c.URL == "" {
		return DefaultURL
	}
	return c.URL
}

func (c *Chain) fetch(ctx context.Context) (Table, error) {
	timeout := c.Timeout
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	client := c.Client
	if client == nil {
		client = &http.Client{Timeout: timeout}
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	return fetch(ctx, client, c.url())
}

// FileSource prices from one explicit models-list file (OpenRouter format), falling back to the bundled table for
// models the file does not list.
type FileSource struct {
	// Path is the models-list file.
	Path string
}

var _ spend.ModelPricingSource = FileSource{}

// Prices implements spend.ModelPricingSource.
func (s FileSource) Prices(_ context.Context, models []string) (spend.Pricing, error) {
	b, err := os.ReadFile(s.Path)
	if err != nil {
		return spend.Pricing{}, fmt.Errorf("pricing: read pricing file: %w", err)
	}
	t, err := ParseModels(b)
	if err != nil {
		var f cacheFile
		if json.Unmarshal(b, &f) != nil || len(f.Models) == 0 {
			return spend.Pricing{}, err
		}
		t = f.Models
	}
	out := spend.Pricing{Rates: map[string]spend.Rates{}, Source: PricingFile}
	bundled := Bundled()
	for _, m := range models {
		if r, ok := t[Normalize(m)]; ok {
			out.Rates[m] = r
		} else if r, ok := bundled[Normalize(m)]; ok {
			out.Rates[m] = r
		}
	}
	return out, nil
}

// WriteFileAtomic writes data to path through a synced temp file and a rename.
func WriteFileAtomic(path string, data []byte) error {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("pricing: create %s: %w", dir, err)
	}
	tmp, err := os.CreateTemp(dir, ".pricing-*.tmp")
	if err != nil {
		return fmt.Errorf("pricing: temp file: %w", err)
	}
	defer func() { _ = os.Remove(tmp.Name()) }()
	_, werr := tmp.Write(data)
	serr := tmp.Sync()
	cerr := tmp.Close()
	if err := errors.Join(werr, serr, cerr); err != nil {
		return fmt.Errorf("pricing: write %s: %w", path, err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("pricing: replace %s: %w", path, err)
	}
	return nil
}
