package spend

import "context"

// Rates are USD per token for each bucket; a zero rate means the bucket costs nothing.
type Rates struct {
	Input        float64 `json:"input"`
	CacheRead    float64 `json:"cacheRead"`
	CacheWrite5m float64 `json:"cacheWrite5m"`
	CacheWrite1h float64 `json:"cacheWrite1h"`
	Output       float64 `json:"output"`
	// Long, when set, replaces these rates for requests whose prompt exceeds TierThreshold tokens.
	Long *Rates `json:"long,omitempty"`
}

// Cost prices one request (or a sum of requests on the same side of the tier threshold).
func (r Rates) Cost(b Buckets, overTier bool) float64 {
	if overTier && r.Long != nil {
		return r.Long.Cost(b, false)
	}
	return float64(b.UncachedInput)*r.Input + float64(b.CacheRead)*r.CacheRead +
		float64(b.CacheWrite5m)*r.CacheWrite5m + float64(b.CacheWrite1h)*r.CacheWrite1h + float64(b.Output)*r.Output
}

// Pricing source labels reported in the payload.
const (
	PricingLive    = "live"
	PricingCache   = "cache"
	PricingBundled = "bundled"
)

// Pricing is the answer of a ModelPricingSource for a set of raw model ids.
type Pricing struct {
	// Rates maps raw model ids to their rates; a model absent here is unpriced.
	Rates map[string]Rates
	// Source says which link of the chain answered: live, cache or bundled.
	Source string
	// FallbackReason says why the live table was not used, when it was not.
	FallbackReason string
}

// ModelPricingSource prices raw model ids as recorded in session files.
type ModelPricingSource interface {
	// Prices returns rates for the given raw model ids.
	Prices(ctx context.Context, models []string) (Pricing, error)
}
