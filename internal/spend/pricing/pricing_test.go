package pricing

import (
	"context"
	"math"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

func TestNormalize(t *testing.T) {
	for raw, want := range map[string]string{
		"claude-sonnet-4-5-20250929":      "anthropic/claude-sonnet-4.5",
		"claude-opus-4-1-20250805":        "anthropic/claude-opus-4.1",
		"claude-opus-4-5-20251101[1m]":    "anthropic/claude-opus-4.5",
		"claude-sonnet-4-5-20250929-fast": "anthropic/claude-sonnet-4.5",
		"claude-opus-4-6-fast":            "anthropic/claude-opus-4.6",
		"claude-sonnet-4-20250514":        "anthropic/claude-sonnet-4",
		"claude-haiku-4-5":                "anthropic/claude-haiku-4.5",
		"claude-3-5-sonnet-20241022":      "anthropic/claude-3.5-sonnet",
		"gpt-5-codex":                     "openai/gpt-5-codex",
		"gpt-5.1-codex-max":               "openai/gpt-5.1-codex-max",
		"o3":                              "openai/o3",
		"openai/gpt-5":                    "openai/gpt-5",
		"mystery-model":                   "mystery-model",
	} {
		if got := Normalize(raw); got != want {
			t.Errorf("Normalize(%q) = %q, want %q", raw, got, want)
		}
	}
}

const models = `{"data":[
 {"id":"anthropic/claude-sonnet-4.5","pricing":{"prompt":"0.000003","completion":"0.000015","input_cache_read":"0.0000003","input_cache_write":"0.00000375",
   "overrides":[{"min_prompt_tokens":200000,"prompt":"0.000006","completion":"0.0000225","input_cache_read":"0.0000006"}]}},
 {"id":"anthropic/claude-sonnet-4.5:free","pricing":{"prompt":"0","completion":"0"}},
 {"id":"openai/gpt-5-codex","pricing":{"prompt":"0.00000125","completion":"0.00001","input_cache_read":"0.000000125"}},
 {"id":"openrouter/auto","pricing":{"prompt":"-1","completion":"-1"}},
 {"id":"openai/gpt-new","pricing":{"prompt":"0.000002","completion":"0.000008","input_cache_write":"-1"}}
]}`

func near(a, b float64) bool { return math.Abs(a-b) < 1e-15 }

func TestParseModels(t *testing.T) {
	tab, err := ParseModels([]byte(models))
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := tab["anthropic/claude-sonnet-4.5:free"]; ok {
		t.Error(":free variant kept")
	}
	if _, ok := tab["openrouter/auto"]; ok {
		t.Error("negative prices kept")
	}
	s := tab["anthropic/claude-sonnet-4.5"]
	if !near(s.Input, 3e-6) || !near(s.CacheWrite5m, 3.75e-6) || !near(s.CacheWrite1h, 6e-6) || !near(s.CacheRead, 3e-7) || !near(s.Output, 15e-6) {
		t.Errorf("sonnet = %+v (1h write falls back to 2x prompt)", s)
	}
	if s.Long == nil || !near(s.Long.Input, 6e-6) || !near(s.Long.Output, 22.5e-6) || !near(s.Long.CacheRead, 6e-7) || !near(s.Long.CacheWrite5m, 3.75e-6) {
		t.Errorf("sonnet long tier = %+v", s.Long)
	}
	g := tab["openai/gpt-new"]
	if g.CacheWrite5m != 0 || g.CacheWrite1h != 0 {
		t.Errorf("negative cache write must be absent (free): %+v", g)
	}
	for _, body := range []string{"<html>oops</html>", `{"data":[]}`, `{"data":[{"id":"x","pricing":{"prompt":"abc","completion":"1"}}]}`} {
		if _, err := ParseModels([]byte(body)); err == nil {
			t.Errorf("ParseModels(%q) succeeded", body)
		}
	}
}

type clock struct{ t time.Time }

func (c *clock) now() time.Time { return c.t }

func server(t *testing.T, body *atomic.Value, hits *atomic.Int64, delay time.Duration) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		if delay > 0 {
			select {
			case <-time.After(delay):
			case <-r.Context().Done():
				return
			}
		}
		_, _ = w.Write([]byte(body.Load().(string)))
	}))
	t.Cleanup(srv.Close)
	return srv
}

func TestChainLiveCacheAndRefresh(t *testing.T) {
	var body atomic.Value
	body.Store(models)
	var hits atomic.Int64
	srv := server(t, &body, &hits, 0)
	clk := &clock{time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	cache := filepath.Join(t.TempDir(), "pricing.json")
	c := &Chain{URL: srv.URL, CachePath: cache, Now: clk.now}
	ctx := context.Background()
	p, err := c.Prices(ctx, []string{"claude-sonnet-4-5-20250929", "gpt-5-codex"})
	if err != nil {
		t.Fatal(err)
	}
	if p.Source != "live" || len(p.Rates) != 2 || hits.Load() != 1 || p.FallbackReason != "" {
		t.Fatalf("first: %+v hits %d", p, hits.Load())
	}
	// within 24h, known models: no fetch
	clk.t = clk.t.Add(23 * time.Hour)
	if p, _ = c.Prices(ctx, []string{"gpt-5-codex"}); hits.Load() != 1 || p.Source != "live" {
		t.Fatalf("within refresh: hits %d source %s", hits.Load(), p.Source)
	}
	// unknown model: eager refresh, then backoff; still unpriced (never $0)
	p, _ = c.Prices(ctx, []string{"claude-nobody-9"})
	if hits.Load() != 2 || len(p.Rates) != 0 {
		t.Fatalf("eager refresh: hits %d rates %v", hits.Load(), p.Rates)
	}
	if _, _ = c.Prices(ctx, []string{"claude-nobody-9"}); hits.Load() != 2 {
		t.Fatalf("eager refresh not backed off: hits %d", hits.Load())
	}
	// after 24h the table is refetched; garbage now: the durable last-good table answers, flagged
	clk.t = clk.t.Add(25 * time.Hour)
	body.Store("<<not json>>")
	p, _ = c.Prices(ctx, []string{"gpt-5-codex"})
	if hits.Load() != 3 || p.Source != "cache" || !strings.Contains(p.FallbackReason, "decode") || len(p.Rates) != 1 {
		t.Fatalf("garbage: %+v hits %d", p, hits.Load())
	}
	// a fresh process with the same cache file and an unreachable endpoint uses the cache
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := "http://" + l.Addr().String() + "/api/v1/models"
	_ = l.Close()
	c2 := &Chain{URL: dead, CachePath: cache, Now: clk.now}
	p, _ = c2.Prices(ctx, []string{"claude-sonnet-4-5-20250929"})
	if p.Source != "cache" || p.FallbackReason == "" || len(p.Rates) != 1 {
		t.Fatalf("unreachable: %+v", p)
	}
}

func TestChainTimeoutAndBundledFallback(t *testing.T) {
	var body atomic.Value
	body.Store(models)
	var hits atomic.Int64
	srv := server(t, &body, &hits, 5*time.Second)
	c := &Chain{URL: srv.URL, CachePath: filepath.Join(t.TempDir(), "p.json"), Timeout: 100 * time.Millisecond}
	start := time.Now()
	p, err := c.Prices(context.Background(), []string{"claude-opus-4-5-20251101", "gpt-5.2-codex", "claude-nobody-9"})
	if err != nil {
		t.Fatal(err)
	}
	if time.Since(start) > 3*time.Second {
		t.Fatalf("timeout not applied: %v", time.Since(start))
	}
	if p.Source != "bundled" || !strings.Contains(p.FallbackReason, "fetch") {
		t.Fatalf("timeout fallback: %+v", p)
	}
	if r := p.Rates["claude-opus-4-5-20251101"]; !near(r.Input, 5e-6) || !near(r.CacheWrite1h, 10e-6) || !near(r.Output, 25e-6) {
		t.Errorf("bundled opus 4.5 = %+v", r)
	}
	if r := p.Rates["gpt-5.2-codex"]; !near(r.Input, 1.75e-6) || !near(r.CacheRead, 0.175e-6) || r.CacheWrite5m != 0 {
		t.Errorf("bundled gpt-5.2-codex = %+v", r)
	}
	if _, ok := p.Rates["claude-nobody-9"]; ok {
		t.Error("unknown model priced")
	}
	off := &Chain{URL: srv.URL, Offline: true}
	before := hits.Load()
	if p, _ = off.Prices(context.Background(), []string{"gpt-5"}); p.Source != "bundled" || hits.Load() != before || !strings.Contains(p.FallbackReason, "offline") {
		t.Fatalf("offline: %+v", p)
	}
}
