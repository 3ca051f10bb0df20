package authority

import (
	"context"
	"hash/fnv"
	"log/slog"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"aicli.dev/aicli/apis/v1alpha1"
	"aicli.dev/aicli/internal/grants"
	"aicli.dev/aicli/internal/storeclient"
	"aicli.dev/aicli/internal/tools"
)

// recordTimeout bounds one record's write (its retries on conflicts included).
const recordTimeout = 10 * time.Second

// recordStripes is how many locks serialise the writes: one grant's records always take the same one, so they
// never race each other, while other grants' records are written concurrently (the store commits them together).
const recordStripes = 64

// Recorder writes each tool call as a status write of its Grant (so each call is an event in the grant's history):
// counters, the last call, and the conversation's count. Record returns once the write is durable: the tool
// server records a call before it sends the caller its exit code.
type Recorder struct {
	Client *storeclient.Client
	Logger *slog.Logger
	// Charge, when set, is told the cost of each authorised call of a tool with costUSD.
	Charge func(namespace, agent, costUSD string)

	stripes [recordStripes]sync.Mutex
}

// Record implements tools.Recorder.
func (r *Recorder) Record(rec tools.CallRecord) {
	if rec.Auth != nil && rec.Auth.Tool.CostUSD != "" && r.Charge != nil {
		r.Charge(rec.Auth.Namespace, rec.Auth.Agent, rec.Auth.Tool.CostUSD)
	}
	ns, grant, _ := recordTarget(rec)
	if grant == "" || grant == grants.BuiltinGrant {
		return
	}
	h := fnv.New32a()
	_, _ = h.Write([]byte(ns + "/" + grant))
	mu := &r.stripes[h.Sum32()%recordStripes]
	mu.Lock()
	defer mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), recordTimeout)
	defer cancel()
	r.write(ctx, rec)
}

func (r *Recorder) write(ctx context.Context, rec tools.CallRecord) {
	ns, grant, conv := recordTarget(rec)
	if grant == "" || grant == grants.BuiltinGrant {
		// Refused before the grant was known: nothing to attribute. A built-in's call has no Grant object;
		// its durable trace is what it did (the mail log, the recall documents).
		return
	}
	call := v1alpha1.ToolCall{
		Tool: rec.Tool, Conversation: conv, At: metav1.NewTime(rec.At), ExitCode: int32(rec.ExitCode),
		DurationMillis: rec.Duration.Milliseconds(), BytesIn: rec.BytesIn, BytesOut: rec.BytesOut, Refused: rec.Refused,
	}
	for attempt := 0; attempt < 10; attempt++ {
		g := &v1alpha1.Grant{}
		if err := r.Client.Get(ctx, ns, grant, g); err != nil {
			if !apierrors.IsNotFound(err) {
				r.Logger.Warn("recording a tool call", "grant", ns+"/"+grant, "err", err)
			}
			return
		}
		if call.Refused != "" {
			g.Status.Refused++
		} else {
			g.Status.Calls++
		}
		g.Status.LastCall = call.DeepCopy()
		for i := range g.Status.Conversations {
			if g.Status.Conversations[i].Name == conv && call.Refused == "" {
				g.Status.Conversations[i].Calls++
			}
		}
		err := r.Client.UpdateStatus(ctx, g)
		if err == nil || !apierrors.IsConflict(err) {
			if err != nil {
				r.Logger.Warn("recording a tool call", "grant", ns+"/"+grant, "err", err)
			}
			return
		}
	}
	r.Logger.Warn("recording a tool call: too many conflicts", "grant", ns+"/"+grant)
}

// recordTarget is the grant a call is attributed to.
func recordTarget(rec tools.CallRecord) (namespace, grant, conversation string) {
	if a := rec.Auth; a != nil {
		return a.Namespace, a.Grant, a.Conversation
	}
	return rec.Namespace, rec.Grant, rec.Conversation
}
