package spend

import "math"

// Harness names the AI CLI that wrote a session file.
type Harness string

// Harnesses with a spend parser.
const (
	HarnessClaude Harness = "claude"
	HarnessCodex  Harness = "codex"
)

// TierThreshold is the prompt size (uncached input + cache read + cache write tokens of one request) above which
// long-context prices apply.
const TierThreshold = 200_000

// Buckets holds token counts in the four disjoint buckets; cache writes keep their 5-minute / 1-hour split.
type Buckets struct {
	// UncachedInput is input that was neither read from nor written to the prompt cache.
	UncachedInput int64
	// CacheRead is input served from the prompt cache.
	CacheRead int64
	// CacheWrite5m is input written to the 5-minute cache (all OpenAI cache writes land here).
	CacheWrite5m int64
	// CacheWrite1h is input written to the 1-hour cache.
	CacheWrite1h int64
	// Output includes reasoning/thinking tokens.
	Output int64
}

// MaxTokens is where token sums saturate: a sum that would pass it stays at it (and the report flags it) instead of
// wrapping to a negative number. It is math.MaxInt64.
const MaxTokens = math.MaxInt64

// SatAdd returns a + b, saturated at MaxTokens (and at math.MinInt64 below) instead of wrapping.
func SatAdd(a, b int64) int64 {
	s := a + b
	switch {
	case b > 0 && s < a:
		return MaxTokens
	case b < 0 && s > a:
		return math.MinInt64
	}
	return s
}

// CacheWrite is the total cache-write bucket.
func (b Buckets) CacheWrite() int64 { return SatAdd(b.CacheWrite5m, b.CacheWrite1h) }

// Prompt is the request's prompt size used for tier selection.
func (b Buckets) Prompt() int64 { return SatAdd(SatAdd(b.UncachedInput, b.CacheRead), b.CacheWrite()) }

// Total is the sum of all buckets.
func (b Buckets) Total() int64 { return SatAdd(b.Prompt(), b.Output) }

// Add returns b + o, each bucket saturated at MaxTokens.
func (b Buckets) Add(o Buckets) Buckets {
	return Buckets{SatAdd(b.UncachedInput, o.UncachedInput), SatAdd(b.CacheRead, o.CacheRead),
		SatAdd(b.CacheWrite5m, o.CacheWrite5m), SatAdd(b.CacheWrite1h, o.CacheWrite1h), SatAdd(b.Output, o.Output)}
}

// Saturated reports whether a reported count (a bucket, or the cache-write total) reached MaxTokens: the true sum
// is at least that, and a cost computed from it is a lower bound.
func (b Buckets) Saturated() bool {
	return b.UncachedInput == MaxTokens || b.CacheRead == MaxTokens || b.CacheWrite() == MaxTokens ||
		b.Output == MaxTokens
}

// Sub returns b - o; it is exact only when b is not Saturated.
func (b Buckets) Sub(o Buckets) Buckets {
	return Buckets{b.UncachedInput - o.UncachedInput, b.CacheRead - o.CacheRead, b.CacheWrite5m - o.CacheWrite5m,
		b.CacheWrite1h - o.CacheWrite1h, b.Output - o.Output}
}

// IsZero reports whether every bucket is zero.
func (b Buckets) IsZero() bool { return b == Buckets{} }

// Event is one request's usage as a parser reports it.
type Event struct {
	// UnixMilli is the request's timestamp (UTC).
	UnixMilli int64
	// Model is the raw model id recorded in the session file.
	Model string
	// Tokens is the request's usage.
	Tokens Buckets
	// Dedup, when non-empty, is the identity shared by copies of the same request (Claude: message.id).
	Dedup string
	// DedupVariant distinguishes distinct requests sharing Dedup (Claude: requestId).
	DedupVariant string
	// Sidechain marks a copy written by a sidechain transcript; it loses to a non-sidechain entry with the same Dedup.
	Sidechain bool
}

// Day returns the event's UTC day as days since 1970-01-01.
func (e Event) Day() int32 { return dayOf(e.UnixMilli) }

func dayOf(ms int64) int32 {
	const msPerDay = 86_400_000
	d := ms / msPerDay
	if ms < 0 && ms%msPerDay != 0 {
		d--
	}
	return int32(d)
}

// QuotaWindow is one rate-limit window as the CLI last reported it.
type QuotaWindow struct {
	// UsedPercent is the share of the window already used.
	UsedPercent float64 `json:"usedPercent"`
	// WindowMinutes is the window's length.
	WindowMinutes int64 `json:"windowMinutes"`
	// ResetsAt is when the window resets (RFC 3339, UTC), if known.
	ResetsAt string `json:"resetsAt,omitempty"`
}

// Quota is a harness's live quota snapshot.
type Quota struct {
	// Harness wrote the snapshot.
	Harness Harness `json:"harness"`
	// ObservedAt is the timestamp of the record that carried the snapshot (RFC 3339, UTC).
	ObservedAt string `json:"observedAt"`
	// Primary is the short window (Codex: 5 hours).
	Primary *QuotaWindow `json:"primary,omitempty"`
	// Secondary is the long window (Codex: weekly).
	Secondary *QuotaWindow `json:"secondary,omitempty"`
	// UnixMilli is ObservedAt as milliseconds, used to pick the newest snapshot.
	UnixMilli int64 `json:"-"`
}
