package budget

import (
	"math"
	"math/big"
	"time"
)

// Bucket is an accrual-rate token bucket in micro-USD: Level grows at Rate per hour up to Capacity and is lowered
// by charges. Level may go negative (spend is measured after the fact): the debt is paid back by accrual before
// anything is covered again. It is a value type with no clock of its own; every method takes now.
type Bucket struct {
	// Rate is the accrual per hour.
	Rate Micro `json:"rate"`
	// Capacity caps Level (the burst).
	Capacity Micro `json:"capacity"`
	// Level is the amount available at AsOf.
	Level Micro `json:"level"`
	// AsOf is when Level was last brought up to date.
	AsOf time.Time `json:"asOf"`
}

// Accrue brings Level up to now: Rate × elapsed, capped at Capacity. A clock that went back accrues nothing (and
// does not move AsOf back).
func (b *Bucket) Accrue(now time.Time) {
	if b.AsOf.IsZero() || !now.After(b.AsOf) {
		if b.AsOf.IsZero() {
			b.AsOf = now
		}
		return
	}
	if b.Level < b.Capacity && b.Rate > 0 {
		gain := mulDiv(int64(b.Rate), int64(now.Sub(b.AsOf)), int64(time.Hour))
		b.Level = min(satAdd(b.Level, Micro(gain)), b.Capacity)
	}
	b.AsOf = now
}

// Charge takes amount off the bucket (at its AsOf; Accrue first). A negative amount is ignored.
func (b *Bucket) Charge(amount Micro) {
	if amount > 0 {
		b.Level = satAdd(b.Level, -amount)
	}
}

// Add puts amount into the bucket (a top-up); a top-up may exceed Capacity, it is not capped.
func (b *Bucket) Add(amount Micro) {
	if amount > 0 {
		b.Level = satAdd(b.Level, amount)
	}
}

// Covers reports whether the bucket at AsOf holds need.
func (b *Bucket) Covers(need Micro) bool { return b.Level >= need }

// TimeUntil is how long after AsOf the bucket will hold need: 0 when it already does. ok is false when that is
// never within maxWait: the rate is zero, need exceeds Capacity (and the current level), or the wait is longer.
func (b *Bucket) TimeUntil(need Micro, maxWait time.Duration) (wait time.Duration, ok bool) {
	if b.Level >= need {
		return 0, true
	}
	if b.Rate <= 0 || need > b.Capacity {
		return 0, false
	}
	missing := int64(need - b.Level)
	// ceil(missing × hour / rate), in nanoseconds.
	ns := mulDivCeil(missing, int64(time.Hour), int64(b.Rate))
	if ns > int64(maxWait) {
		return time.Duration(min(ns, math.MaxInt64)), false
	}
	return time.Duration(ns), true
}

// mulDiv is a×b/c rounded down, saturated at MaxInt64, for non-negative inputs.
func mulDiv(a, b, c int64) int64 {
	r := new(big.Int).Mul(big.NewInt(a), big.NewInt(b))
	r.Quo(r, big.NewInt(c))
	if !r.IsInt64() {
		return math.MaxInt64
	}
	return r.Int64()
}

// mulDivCeil is a×b/c rounded up, saturated at MaxInt64, for non-negative inputs.
func mulDivCeil(a, b, c int64) int64 {
	r := new(big.Int).Mul(big.NewInt(a), big.NewInt(b))
	r.Add(r, big.NewInt(c-1))
	r.Quo(r, big.NewInt(c))
	if !r.IsInt64() {
		return math.MaxInt64
	}
	return r.Int64()
}
