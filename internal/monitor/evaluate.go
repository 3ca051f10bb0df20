package monitor

import (
	"context"
	"slices"
	"time"

	"aicli.dev/aicli/apis/v1alpha1"
	"aicli.dev/aicli/internal/monitor/breaker"
	"aicli.dev/aicli/internal/monitor/match"
	"aicli.dev/aicli/internal/transcript/transcriptwire"
)

// Bounds of one trigger message.
const (
	// MaxExcerpts is how many excerpts one wake carries (the hit count and
	// the cursor range say how many more there were).
	MaxExcerpts = 10
	// ExcerptRadius is how much text around a hit an excerpt shows; an
	// entry shorter than WholeEntry bytes is shown whole.
	ExcerptRadius = 160
	WholeEntry    = 400
)

// pendingWake is the coalesced hits of one target conversation that have not
// woken the monitor yet.
type pendingWake struct {
	target, targetUID string
	keywords          []string
	excerpts          []excerpt
	hits              int
	firstCursor       int64
	lastCursor        int64
	since             time.Time
}

// excerpt is one matched entry's text around its first hit.
type excerpt struct {
	cursor  int64
	speaker string
	text    string
}

// evaluate matches one transcript entry, exactly once: the monitor's own
// injections are skipped (self-damping), the speaker filter applies, a human
// entry restarts the breaker's human-less count, and hits join the target's
// pending wake.
func (s *Service) evaluate(ctx context.Context, st *attState, target, uid string, e transcriptwire.Entry) {
	st.mu.Lock()
	if e.Cursor <= st.evaluated[target] {
		st.mu.Unlock()
		return
	}
	a := st.obj
	ns, name, monitor := a.Namespace, a.Name, a.Spec.Monitor
	closed := st.closed()
	woke := false
	if closed && e.Speaker != transcriptwire.SpeakerInjectedPrefix+monitor && st.matcher.Speaks(e.Speaker) {
		if hits := st.matcher.Match(e.Text); len(hits) > 0 {
			st.add(target, uid, e, hits, s.now())
			woke = true
		}
	}
	st.evaluated[target] = e.Cursor
	human := closed && e.Speaker == transcriptwire.SpeakerHuman && a.Status.ConsecutiveHumanless > 0
	cursor := st.safeCursor(target)
	st.mu.Unlock()
	if human {
		// At once, not batched: an injection right after must count from zero.
		_, err := s.mutate(ctx, st, ns, name, func(a *v1alpha1.MonitorAttachment) error {
			breaker.Human(a)
			setCursor(a, target, cursor)
			return nil
		})
		if err != nil {
			s.log().Warn("monitor: recording a human message", "namespace", ns, "attachment", name, "err", err)
		} else {
			st.mu.Lock()
			st.flushed[target] = max(st.flushed[target], cursor)
			st.mu.Unlock()
		}
	}
	if woke {
		s.queue(ns, monitor).poke()
	}
}

// add joins hits of entry e to target's pending wake. st.mu must be held.
func (st *attState) add(target, uid string, e transcriptwire.Entry, hits []match.Hit, now time.Time) {
	p := st.pending[target]
	if p == nil {
		p = &pendingWake{target: target, targetUID: uid, firstCursor: e.Cursor, since: now}
		st.pending[target] = p
	}
	p.hits += len(hits)
	p.lastCursor = e.Cursor
	for _, h := range hits {
		if !slices.Contains(p.keywords, h.Keyword) {
			p.keywords = append(p.keywords, h.Keyword)
		}
	}
	if len(p.excerpts) < MaxExcerpts {
		text := e.Text
		if len(text) > WholeEntry {
			text = match.Excerpt(e.Text, hits[0], ExcerptRadius)
		}
		p.excerpts = append(p.excerpts, excerpt{cursor: e.Cursor, speaker: e.Speaker, text: text})
	}
}

// take removes and returns target's pending wake with the cursor it covers
// (everything evaluated so far). st.mu must be held.
func (st *attState) take(target string) (*pendingWake, int64) {
	p := st.pending[target]
	delete(st.pending, target)
	return p, st.evaluated[target]
}
