package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"sort"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"aicli.dev/aicli/guest/harness/fake/cli"
	"aicli.dev/aicli/internal/client"
	"aicli.dev/aicli/internal/mailbox/mailwire"
)

// Operation kinds of the load.
const (
	opSend     = "send"      // a message into the agent's live conversation
	opWake     = "wake"      // a send carrying the monitors' keyword into a watched conversation
	opTool     = "tool"      // a send making the fake CLI run the granted tool: "!run soak-tool ID"
	opMailAPI  = "mail-api"  // agent→agent mail through the API (idempotency key, retried across restarts)
	opMailTool = "mail-tool" // a send making the fake CLI run the mounted mail-send built-in
)

var opKinds = []string{opSend, opWake, opTool, opMailAPI, opMailTool}

// sendRec is one send into a conversation; acked once the API answered 202.
type sendRec struct {
	kind, agent, conv, id, text string
	acked                       bool
	// seq orders a worker's sends (the guest delivers them in acceptance order).
	seq int
	// to is the peer of a mail-tool send.
	to string
}

// mailRec is one API mail; acked with the sequence the API answered.
type mailRec struct {
	from, to, body string
	n              int // the sender's n-th mail
	seq            uint64
	acked          bool
}

// ledger records every operation the load attempted and which were acknowledged.
type ledger struct {
	mu       sync.Mutex
	sends    []*sendRec
	mails    []*mailRec
	attempts map[string]int
	acks     map[string]int
	errs     map[string]map[string]int // kind → error class → count
}

func newLedger() *ledger {
	return &ledger{attempts: map[string]int{}, acks: map[string]int{}, errs: map[string]map[string]int{}}
}

func (l *ledger) attempt(kind string) {
	l.mu.Lock()
	l.attempts[kind]++
	l.mu.Unlock()
}

func (l *ledger) failed(kind string, err error) {
	class := "other"
	var se apierrors.APIStatus
	switch {
	case client.IsConnectionError(err):
		class = "connection"
	case errors.As(err, &se):
		class = fmt.Sprint(se.Status().Code)
	case errors.Is(err, context.DeadlineExceeded):
		class = "timeout"
	}
	l.mu.Lock()
	if l.errs[kind] == nil {
		l.errs[kind] = map[string]int{}
	}
	l.errs[kind][class]++
	l.mu.Unlock()
}

// load drives the workers' operations; gate pauses it (a write lock waits for every operation in flight).
type load struct {
	c      *client.Client
	f      *fleet
	l      *ledger
	gate   sync.RWMutex
	period time.Duration // mean pause between one worker's operations
}

// run starts one goroutine per worker and returns when ctx ends and all have stopped.
func (ld *load) run(ctx context.Context) {
	var wg sync.WaitGroup
	for i, agent := range ld.f.workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ld.worker(ctx, agent, rand.New(rand.NewPCG(uint64(i), uint64(time.Now().UnixNano()))))
		}()
	}
	wg.Wait()
}

// pause stops new operations and waits for those in flight; resume undoes it.
func (ld *load) pause()  { ld.gate.Lock() }
func (ld *load) resume() { ld.gate.Unlock() }

func (ld *load) worker(ctx context.Context, agent string, r *rand.Rand) {
	n := 0
	for ctx.Err() == nil {
		ld.gate.RLock()
		if ctx.Err() == nil {
			n++
			ld.one(ctx, agent, n, r)
		}
		ld.gate.RUnlock()
		// Uniform in [0.5, 1.5) × period.
		d := time.Duration((0.5 + r.Float64()) * float64(ld.period))
		select {
		case <-ctx.Done():
		case <-time.After(d):
		}
	}
}

// one runs the worker's n-th operation, of a kind chosen by weight.
func (ld *load) one(ctx context.Context, agent string, n int, r *rand.Rand) {
	conv := ld.f.convs[agent]
	id := fmt.Sprintf("%s-%d", agent, n)
	peer := ld.peer(agent, r)
	x := r.IntN(100)
	switch {
	case x < 30:
		// A burst of up to three, so that messages queue in the guest.
		for i := range 1 + r.IntN(3) {
			bid := fmt.Sprintf("%s.%d", id, i)
			ld.send(ctx, &sendRec{kind: opSend, agent: agent, conv: conv, id: bid, text: "soak " + bid + " hello"})
		}
	case x < 40 && ld.f.watched[agent] != "":
		ld.send(ctx, &sendRec{kind: opWake, agent: agent, conv: conv, id: id, text: keyword + " " + id + " look here"})
	case x < 60:
		ld.send(ctx, &sendRec{kind: opTool, agent: agent, conv: conv, id: id,
			text: fmt.Sprintf("soak %s %s %s t-%s", id, cli.MarkRun, soakTool, id)})
	case x < 68:
		ld.send(ctx, &sendRec{kind: opMailTool, agent: agent, conv: conv, id: id, to: peer,
			text: fmt.Sprintf("soak %s %s mail-send %s mt-%s", id, cli.MarkRun, peer, id)})
	default:
		ld.mail(ctx, &mailRec{from: agent, to: peer, body: "m-" + id, n: n})
	}
}

func (ld *load) peer(agent string, r *rand.Rand) string {
	for {
		if p := ld.f.workers[r.IntN(len(ld.f.workers))]; p != agent {
			return p
		}
	}
}

// send posts one message; it is acknowledged only by a 202.
func (ld *load) send(ctx context.Context, s *sendRec) {
	ld.l.attempt(s.kind)
	ld.l.mu.Lock()
	ld.l.sends = append(ld.l.sends, s)
	s.seq = len(ld.l.sends)
	ld.l.mu.Unlock()
	err := ld.c.Send(ctx, namespace, s.conv, s.text)
	if err != nil {
		ld.l.failed(s.kind, err)
		return
	}
	ld.l.mu.Lock()
	s.acked = true
	if s.kind != opTool && s.kind != opMailTool { // those are acknowledged by the result the caller saw
		ld.l.acks[s.kind]++
	}
	ld.l.mu.Unlock()
}

// mail sends one API mail with an idempotency key, retrying with the same key while the supervisor is
// unreachable (a restart), as a client must to get exactly-once.
func (ld *load) mail(ctx context.Context, m *mailRec) {
	ld.l.attempt(opMailAPI)
	ld.l.mu.Lock()
	ld.l.mails = append(ld.l.mails, m)
	ld.l.mu.Unlock()
	body, _ := json.Marshal(mailwire.SendRequest{To: m.to, Body: m.body, IdempotencyKey: m.body})
	deadline := time.Now().Add(90 * time.Second)
	for {
		data, err := ld.c.DoRaw(ctx, http.MethodPost, client.ResourcePath("agents", namespace, m.from, mailwire.SubMail),
			client.ContentTypeJSON, body)
		if err == nil {
			var sent mailwire.SendResponse
			if err := json.Unmarshal(data, &sent); err != nil {
				ld.l.failed(opMailAPI, err)
				return
			}
			ld.l.mu.Lock()
			m.seq, m.acked = sent.Seq, true
			ld.l.acks[opMailAPI]++
			ld.l.mu.Unlock()
			return
		}
		if !client.IsConnectionError(err) || ctx.Err() != nil || time.Now().After(deadline) {
			ld.l.failed(opMailAPI, err)
			return
		}
		select {
		case <-ctx.Done():
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// sendsByConv groups the sends by conversation, in send order.
func (l *ledger) sendsByConv() map[string][]*sendRec {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := map[string][]*sendRec{}
	for _, s := range l.sends {
		out[s.conv] = append(out[s.conv], s)
	}
	for _, list := range out {
		sort.Slice(list, func(i, j int) bool { return list[i].seq < list[j].seq })
	}
	return out
}
