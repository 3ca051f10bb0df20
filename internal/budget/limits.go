package budget

import (
	"fmt"
	"time"

	"aicli.dev/aicli/apis/v1alpha1"
)

// DefaultMaxWait is how long delivery may be held when spec.budget.maxWaitSeconds is unset.
const DefaultMaxWait = 600 * time.Second

// Limits are an agent's budget settings in the bucket's units.
type Limits struct {
	Rate, Capacity Micro
	MaxWait        time.Duration
}

// LimitsOf reads spec.budget; ok is false when the agent sets no budget (no usdPerHour).
func LimitsOf(spec *v1alpha1.BudgetSpec) (lim Limits, ok bool, err error) {
	if spec == nil || spec.USDPerHour == "" {
		return Limits{}, false, nil
	}
	if lim.Rate, err = ParseUSD(spec.USDPerHour); err != nil {
		return Limits{}, false, fmt.Errorf("spec.budget.usdPerHour: %w", err)
	}
	lim.Capacity = lim.Rate // one hour of accrual
	if spec.BurstUSD != "" {
		if lim.Capacity, err = ParseUSD(spec.BurstUSD); err != nil {
			return Limits{}, false, fmt.Errorf("spec.budget.burstUSD: %w", err)
		}
	}
	lim.MaxWait = DefaultMaxWait
	if spec.MaxWaitSeconds != nil {
		lim.MaxWait = time.Duration(*spec.MaxWaitSeconds) * time.Second
	}
	return lim, true, nil
}
