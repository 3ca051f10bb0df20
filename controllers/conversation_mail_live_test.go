package controllers

import (
	"context"
	"fmt"
	"sort"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"aicli.dev/aicli/apis/v1alpha1"
	"aicli.dev/aicli/internal/mailbox"
	"aicli.dev/aicli/internal/transcript"
)

// TestMailReachesLiveConversations runs the controllers with the in-process
// guest and fake CLI: a backlog sent to an offline agent is delivered into its
// first conversation once the CLI is ready, and mail sent while it runs is
// delivered at the next IDLE, all through the mailbox's change hook (no
// manual reconcile). It logs the latency from append to the guest's accepting
// the delivery (the acknowledgement).
func TestMailReachesLiveConversations(t *testing.T) {
	hook := &ChangeHook{}
	var mb *mailbox.Mailbox
	e := startConversations(t, func(o *Options) {
		var err error
		if mb, err = mailbox.Open(context.Background(), o.Store.(mailbox.Store), mailbox.Options{Changed: hook.Fire}); err != nil {
			t.Fatal(err)
		}
		o.Mail, o.MailChanged, o.Attribution = mb, hook, &transcript.Attribution{}
	})
	ctx := context.Background()
	e.create("agents", fakeAgentJSON)
	send := func(body string) {
		if _, err := mb.Append(ctx, mailbox.Message{Namespace: "default", From: "x", To: "a", Body: body}); err != nil {
			t.Fatal(err)
		}
	}
	unread := func() int {
		n, err := mb.Unread(ctx, "default", "a")
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	const backlog = 45
	for i := range backlog {
		send(fmt.Sprint("backlog ", i))
	}
	e.create("conversations", convJSON("c1", "a"))
	e.waitConv("the backlog delivered", "c1", func(c *v1alpha1.Conversation) bool {
		cond := meta.FindStatusCondition(c.Status.Conditions, v1alpha1.ConditionMailDelivered)
		return idle(c) && cond != nil && cond.Status == metav1.ConditionTrue && unread() == 0
	})

	var lat []time.Duration
	for i := range 20 {
		start := time.Now()
		send(fmt.Sprint("live ", i))
		deadline := start.Add(20 * time.Second)
		for unread() != 0 {
			if time.Now().After(deadline) {
				t.Fatalf("live mail %d not delivered in 20s", i)
			}
			time.Sleep(time.Millisecond)
		}
		lat = append(lat, time.Since(start))
		e.waitConv("IDLE again", "c1", idle)
	}
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	t.Logf("live mail append → delivered and acknowledged: p50 %v, max %v (n=%d, fake CLI)", lat[len(lat)/2], lat[len(lat)-1], len(lat))
}
