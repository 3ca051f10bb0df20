package budget

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// Micro is an amount in micro-USD (1 USD = 1,000,000). The API carries money as decimal strings; the budget
// computes in Micro so that sums are exact.
type Micro int64

// MicroPerUSD is one dollar in Micro.
const MicroPerUSD Micro = 1_000_000

// ParseUSD reads a non-negative decimal dollar string ("1", "0.25", "12.000001"); at most 6 decimals.
func ParseUSD(s string) (Micro, error) {
	s = strings.TrimSpace(s)
	whole, frac, dotted := strings.Cut(s, ".")
	if whole == "" || (dotted && frac == "") || len(frac) > 6 || strings.ContainsAny(whole+frac, "+-") {
		return 0, fmt.Errorf("%q is not a decimal dollar amount with at most 6 decimals", s)
	}
	w, err := strconv.ParseInt(whole, 10, 64)
	if err != nil || w > math.MaxInt64/int64(MicroPerUSD)-1 {
		return 0, fmt.Errorf("%q is not a decimal dollar amount (or is too large)", s)
	}
	f := int64(0)
	if frac != "" {
		f, err = strconv.ParseInt(frac+strings.Repeat("0", 6-len(frac)), 10, 64)
		if err != nil {
			return 0, fmt.Errorf("%q is not a decimal dollar amount", s)
		}
	}
	return Micro(w)*MicroPerUSD + Micro(f), nil
}

// FromUSD converts a float dollar amount (the spend index's cost) to Micro, rounded to the nearest micro-dollar.
func FromUSD(usd float64) Micro {
	if usd <= 0 || math.IsNaN(usd) {
		return 0
	}
	if usd >= float64(math.MaxInt64)/float64(MicroPerUSD) {
		return math.MaxInt64
	}
	return Micro(math.Round(usd * float64(MicroPerUSD)))
}

// String renders m as a decimal dollar string without trailing zeros ("0", "1.5", "-0.000001").
func (m Micro) String() string {
	sign := ""
	u := uint64(m)
	if m < 0 {
		sign, u = "-", uint64(-m)
	}
	s := fmt.Sprintf("%s%d.%06d", sign, u/uint64(MicroPerUSD), u%uint64(MicroPerUSD))
	s = strings.TrimRight(s, "0")
	return strings.TrimSuffix(s, ".")
}

// satAdd adds without wrapping.
func satAdd(a, b Micro) Micro {
	s := a + b
	switch {
	case b > 0 && s < a:
		return math.MaxInt64
	case b < 0 && s > a:
		return math.MinInt64
	}
	return s
}
