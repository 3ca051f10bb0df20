package budget

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"aicli.dev/aicli/internal/store"
)

// Side-table buckets of the ledger.
const (
	stateBucket = "budget"
	heldBucket  = "budget-held"
)

// Store is the store's side table (synced writes, no events).
type Store interface {
	PutKV(ctx context.Context, bucket, key string, val []byte) error
	GetKV(ctx context.Context, bucket, key string) ([]byte, error)
	DeleteKV(ctx context.Context, bucket, key string) error
	ScanKV(ctx context.Context, bucket, prefix, from string, limit int) ([]store.KV, error)
	LastKV(ctx context.Context, bucket, prefix string) (store.KV, bool, error)
}

// SpendSource measures an agent's spend per CLI session (the spend index).
type SpendSource interface {
	SessionCosts(ctx context.Context, namespace, agent string) (map[string]Micro, error)
}

// Ledger owns the agents' buckets and the held messages, durably in the store's side table: the bucket state
// under budget/<ns>/<agent>, held messages under budget-held/<conversation uid>/<seq>. It serialises its own
// read-modify-writes; it is the only writer of both.
type Ledger struct {
	Store Store
	// Spend measures conversation spend; nil charges none (tool calls only).
	Spend SpendSource
	// Now is the clock (default time.Now).
	Now func() time.Time
	// Changed, when set, is told that an agent's budget changed in a way that may release held messages or end a
	// pause (a top-up, a held message); the supervisor re-reconciles the agent and its conversations.
	Changed func(namespace, agent string)

	mu sync.Mutex
}

func (l *Ledger) now() time.Time {
	if l.Now != nil {
		return l.Now()
	}
	return time.Now()
}

func (l *Ledger) changed(ns, agent string) {
	if l.Changed != nil {
		l.Changed(ns, agent)
	}
}

func stateKey(ns, agent string) string { return ns + "/" + agent }

func (l *Ledger) load(ctx context.Context, ns, agent string) (*State, error) {
	raw, err := l.Store.GetKV(ctx, stateBucket, stateKey(ns, agent))
	if apierrors.IsNotFound(err) {
		return &State{}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("budget: read %s/%s: %w", ns, agent, err)
	}
	st := &State{}
	if err := json.Unmarshal(raw, st); err != nil {
		return nil, fmt.Errorf("budget: decode %s/%s: %w", ns, agent, err)
	}
	return st, nil
}

func (l *Ledger) save(ctx context.Context, ns, agent string, st *State) error {
	raw, err := json.Marshal(st)
	if err != nil {
		return err
	}
	if err := l.Store.PutKV(ctx, stateBucket, stateKey(ns, agent), raw); err != nil {
		return fmt.Errorf("budget: write %s/%s: %w", ns, agent, err)
	}
	return nil
}

// update runs fn on the agent's state brought up to now under lim, and saves it.
func (l *Ledger) update(ctx context.Context, ns, agent string, lim Limits, fn func(*State) error) (*State, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	st, err := l.load(ctx, ns, agent)
	if err != nil {
		return nil, err
	}
	fresh := st.Bucket.AsOf.IsZero()
	st.apply(lim, l.now())
	if fresh {
		st.Bucket.Level = lim.Capacity // a new budget starts full
	}
	if err := fn(st); err != nil {
		return nil, err
	}
	return st, l.save(ctx, ns, agent, st)
}

// settle charges the increase of the conversation's measured spend (its sessions so far plus session) since the
// last charge.
func (l *Ledger) settle(ctx context.Context, ns, agent string, st *State, convUID, session string) error {
	c := st.conversation(convUID)
	if session != "" {
		if _, ok := c.Charged[session]; !ok {
			c.Charged[session] = 0
		}
	}
	if l.Spend == nil || len(c.Charged) == 0 {
		return nil
	}
	costs, err := l.Spend.SessionCosts(ctx, ns, agent)
	if err != nil {
		return fmt.Errorf("budget: measuring spend of %s/%s: %w", ns, agent, err)
	}
	for s, charged := range c.Charged {
		if cost := costs[s]; cost > charged {
			st.charge(cost - charged)
			c.Charged[s] = cost
		}
	}
	return nil
}

// Snapshot returns the agent's state brought up to now under lim (and saved, so that asOf moves forward).
func (l *Ledger) Snapshot(ctx context.Context, ns, agent string, lim Limits) (*State, error) {
	return l.update(ctx, ns, agent, lim, func(*State) error { return nil })
}

// ChargeToolCall charges a tool call's cost (a Grant's costUSD) to the agent's bucket. It uses the limits the
// bucket last saw; an agent whose budget was never settled starts from an empty bucket with no accrual until the
// next settle applies its spec.
func (l *Ledger) ChargeToolCall(namespace, agent string, usd Micro) error {
	ctx := context.Background()
	l.mu.Lock()
	defer l.mu.Unlock()
	st, err := l.load(ctx, namespace, agent)
	if err != nil {
		return err
	}
	st.Bucket.Accrue(l.now())
	st.charge(usd)
	return l.save(ctx, namespace, agent, st)
}

// TopUp adds usd to the agent's bucket (beyond its capacity if need be) and tells Changed.
func (l *Ledger) TopUp(ctx context.Context, ns, agent string, lim Limits, usd Micro) (*State, error) {
	st, err := l.update(ctx, ns, agent, lim, func(st *State) error {
		st.Bucket.Add(usd)
		st.ToppedUp = satAdd(st.ToppedUp, usd)
		return nil
	})
	if err == nil {
		l.changed(ns, agent)
	}
	return st, err
}
