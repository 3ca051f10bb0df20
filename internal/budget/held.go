package budget

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"aicli.dev/aicli/internal/transcript/transcriptwire"
)

// Held is one message waiting for the budget, in arrival order.
type Held struct {
	// Key is its side-table key (release it with Delivered).
	Key string
	// Speaker is who the transcript attributes it to once delivered
	// (transcriptwire speakers: human, injected:<monitor>, …; unattributed
	// when the sender named none).
	Speaker string
	Text    string
}

// A held value is heldAttributed, the speaker, heldAttributed and the text.
// Every value is written so; a value without the leading NUL was written
// before held messages kept their speaker and is a human's text. The speaker
// ends at the first NUL after it, so no text can pose as another speaker.
const heldAttributed = "\x00"

func encodeHeld(speaker, text string) []byte {
	if speaker == "" {
		speaker = transcriptwire.SpeakerUnattributed // a sender nobody named is nobody's, least of all a human's
	}
	return []byte(heldAttributed + speaker + heldAttributed + text)
}

func decodeHeld(key string, v []byte) Held {
	s := string(v)
	if rest, ok := strings.CutPrefix(s, heldAttributed); ok {
		if speaker, text, ok := strings.Cut(rest, heldAttributed); ok {
			return Held{Key: key, Speaker: speaker, Text: text}
		}
	}
	return Held{Key: key, Speaker: transcriptwire.SpeakerHuman, Text: s}
}

// heldPrefix scopes a conversation's held messages.
func heldPrefix(convUID string) string { return convUID + "/" }

// HeldMessages returns the conversation's held messages, oldest first.
func (l *Ledger) HeldMessages(ctx context.Context, convUID string) ([]Held, error) {
	kvs, err := l.Store.ScanKV(ctx, heldBucket, heldPrefix(convUID), "", 0)
	if err != nil {
		return nil, fmt.Errorf("budget: read held messages: %w", err)
	}
	out := make([]Held, len(kvs))
	for i, kv := range kvs {
		out[i] = decodeHeld(kv.Key, kv.Value)
	}
	return out, nil
}

// hold appends text, spoken by speaker, to the conversation's held messages (synced before it returns). Callers hold l.mu.
func (l *Ledger) hold(ctx context.Context, convUID, speaker, text string) error {
	seq := uint64(1)
	last, ok, err := l.Store.LastKV(ctx, heldBucket, heldPrefix(convUID))
	if err != nil {
		return fmt.Errorf("budget: read held messages: %w", err)
	}
	if ok {
		n, err := strconv.ParseUint(strings.TrimPrefix(last.Key, heldPrefix(convUID)), 10, 64)
		if err != nil {
			return fmt.Errorf("budget: held message key %q: %w", last.Key, err)
		}
		seq = n + 1
	}
	key := fmt.Sprintf("%s%020d", heldPrefix(convUID), seq)
	if err := l.Store.PutKV(ctx, heldBucket, key, encodeHeld(speaker, text)); err != nil {
		return fmt.Errorf("budget: hold message: %w", err)
	}
	return nil
}

// Admit decides a message sent to a live conversation: deliver now (true: it is counted as delivered), or hold it
// durably (false) because earlier messages are held (order is kept) or the bucket cannot cover the conversation's
// next-message estimate. A held message is released by the conversation's reconciler (Review, Delivered).
func (l *Ledger) Admit(ctx context.Context, ns, agent string, lim Limits, convUID, session, speaker, text string) (bool, error) {
	deliver := false
	_, err := l.update(ctx, ns, agent, lim, func(st *State) error {
		if err := l.settle(ctx, ns, agent, st, convUID, session); err != nil {
			return err
		}
		held, err := l.Store.ScanKV(ctx, heldBucket, heldPrefix(convUID), "", 1)
		if err != nil {
			return err
		}
		c := st.conversation(convUID)
		if len(held) == 0 && st.Bucket.Covers(c.NextCost()) {
			deliver = true
			c.Delivered++
			return nil
		}
		return l.hold(ctx, convUID, speaker, text)
	})
	if err == nil && !deliver {
		l.changed(ns, agent)
	}
	return deliver, err
}

// Review is what the conversation's reconciler needs to decide on its held messages.
type Review struct {
	// Held are the held messages, oldest first.
	Held []Held
	// Release is how many of them the bucket covers now (each at the estimate).
	Release int
	// Need is the estimate of one message; Wait how long until the first unreleased one is covered; Exhausted is
	// true when accrual cannot cover it within the agent's maxWait.
	Need      Micro
	Wait      time.Duration
	Exhausted bool
	// Spent is the conversation's measured spend; Level the bucket's level now.
	Spent, Level Micro
}

// Review settles the conversation's spend and says which held messages can go.
func (l *Ledger) Review(ctx context.Context, ns, agent string, lim Limits, convUID, session string) (Review, error) {
	var rv Review
	_, err := l.update(ctx, ns, agent, lim, func(st *State) error {
		if err := l.settle(ctx, ns, agent, st, convUID, session); err != nil {
			return err
		}
		held, err := l.HeldMessages(ctx, convUID)
		if err != nil {
			return err
		}
		c := st.conversation(convUID)
		rv = Review{Held: held, Need: c.NextCost(), Spent: c.Spent(), Level: st.Bucket.Level}
		b := st.Bucket
		for rv.Release < len(held) && b.Covers(rv.Need) {
			rv.Release++
			b.Charge(rv.Need) // what the released ones are expected to spend
			if rv.Need == 0 {
				rv.Release = len(held)
			}
		}
		if rv.Release < len(held) {
			wait, ok := b.TimeUntil(rv.Need, lim.MaxWait)
			rv.Wait, rv.Exhausted = wait, !ok
		}
		return nil
	})
	return rv, err
}

// Delivered records that the held message key was delivered: it leaves the queue and counts as delivered.
func (l *Ledger) Delivered(ctx context.Context, ns, agent string, lim Limits, convUID, key string) error {
	_, err := l.update(ctx, ns, agent, lim, func(st *State) error {
		if err := l.Store.DeleteKV(ctx, heldBucket, key); err != nil {
			return fmt.Errorf("budget: release held message: %w", err)
		}
		st.conversation(convUID).Delivered++
		return nil
	})
	return err
}
