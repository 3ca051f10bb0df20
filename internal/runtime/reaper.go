package runtime

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"
)

// DefaultReapInterval is the sweep period Reaper.Run uses when Interval is zero.
const DefaultReapInterval = time.Minute

// Reaper removes orphaned containers: containers matching Selector (typically this supervisor's id label) that
// IsKnown rejects. It is the backstop for crashes between create and record, and for containers whose owner was
// deleted while the supervisor was down.
type Reaper struct {
	// Runtime lists and removes containers.
	Runtime Runtime
	// Selector picks the containers this reaper owns; it must not be empty (an empty selector would reap
	// every container on the engine).
	Selector map[string]string
	// IsKnown reports whether a container is still wanted; containers for which it returns false are removed.
	IsKnown func(ContainerState) bool
	// Interval is the period of Run; zero means DefaultReapInterval.
	Interval time.Duration
	// MinAge spares containers created less than MinAge ago whatever IsKnown says: it closes the window between
	// an owner's Create and the moment it records the container. Zero spares nothing.
	MinAge time.Duration
	// Now is the clock MinAge is measured with; nil means time.Now.
	Now func() time.Time
	// Logger receives one line per removed container; nil means slog.Default().
	Logger *slog.Logger
}

// SweepOnce lists the selected containers once and removes every one IsKnown rejects. It returns the ids removed
// and the joined errors of failed removals (a failure does not stop the sweep).
func (r *Reaper) SweepOnce(ctx context.Context) ([]string, error) {
	if len(r.Selector) == 0 {
		return nil, errors.New("reaper: empty selector refused (it would match every container)")
	}
	if r.Runtime == nil || r.IsKnown == nil {
		return nil, errors.New("reaper: Runtime and IsKnown are required")
	}
	states, err := r.Runtime.List(ctx, r.Selector)
	if err != nil {
		return nil, fmt.Errorf("reaper: list containers: %w", err)
	}
	var removed []string
	var errs []error
	now := time.Now
	if r.Now != nil {
		now = r.Now
	}
	for _, st := range states {
		if r.MinAge > 0 && !st.CreatedAt.IsZero() && now().Sub(st.CreatedAt) < r.MinAge {
			continue
		}
		if r.IsKnown(st) {
			continue
		}
		if err := r.Runtime.Remove(ctx, st.ID); err != nil {
			errs = append(errs, fmt.Errorf("reaper: remove %s (%s): %w", st.Name, st.ID, err))
			continue
		}
		removed = append(removed, st.ID)
		r.logger().Info("removed orphaned container", "id", st.ID, "name", st.Name, "status", st.Status,
			"labels", st.Labels)
	}
	return removed, errors.Join(errs...)
}

// Run sweeps immediately and then every Interval until ctx ends. Sweep errors are logged, not returned: the
// reaper is a backstop and must keep running. It returns ctx.Err() when ctx ends.
func (r *Reaper) Run(ctx context.Context) error {
	interval := r.Interval
	if interval <= 0 {
		interval = DefaultReapInterval
	}
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		if _, err := r.SweepOnce(ctx); err != nil && ctx.Err() == nil {
			r.logger().Error("orphan sweep failed", "err", err)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
		}
	}
}

func (r *Reaper) logger() *slog.Logger {
	if r.Logger != nil {
		return r.Logger
	}
	return slog.Default()
}
