//go:build e2e

package e2e_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"aicli.dev/aicli/internal/client"
	"aicli.dev/aicli/internal/transcript/transcriptwire"
)

// BenchmarkMailLiveDelivery measures mail posted to a live, IDLE fake
// conversation until it shows in that conversation's transcript subscription
// as a mail:<sender> entry, against the same path for a human message sent
// with sendMessage (the same-run baseline: what the transcript pump and the
// fake CLI cost either way). Each iteration waits, untimed, for the reply and
// IDLE before the next, so no deliberate IDLE wait is measured.
//
//	go test -tags e2e -run '^$' -bench MailLiveDelivery -benchtime 30x ./e2e/
func BenchmarkMailLiveDelivery(b *testing.B) {
	useBenchSuite(b)
	ctx := context.Background()
	sup := benchSupervisor(b, b.TempDir())
	defer func() { sup.stop(); sup.removeContainers(ctx) }()
	sup.apply(ctx, `{"apiVersion":"aicli.dev/v1alpha1","kind":"Agent","metadata":{"name":"b","namespace":"default"},"spec":{"harness":"fake","peers":{},"env":[{"name":"AICLI_FAKE_DELAY","value":"0s"}]}}`)
	sup.apply(ctx, mailAgent("a", "b"))
	conv := sup.start(ctx, "b")
	sup.waitState(ctx, conv, "Active", "IDLE", 5*time.Minute)
	resp, err := sup.client.Do(ctx, "GET", client.ResourcePath("conversations", "default", conv, "transcript")+"?follow=true", "", nil)
	if err != nil {
		b.Fatal(err)
	}
	defer resp.Body.Close()
	entries := make(chan transcriptwire.Entry, 64)
	go func() {
		defer close(entries)
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			var e transcriptwire.Entry
			if json.Unmarshal(sc.Bytes(), &e) == nil {
				entries <- e
			}
		}
	}()
	// await returns when an entry of speaker with text arrives, then drains the reply to it and waits for IDLE.
	await := func(speaker, text string) time.Time {
		for e := range entries {
			if e.Speaker == speaker && e.Text == text {
				at := time.Now()
				for r := range entries {
					if r.Speaker == transcriptwire.SpeakerAgent {
						break
					}
				}
				sup.waitState(ctx, conv, "Active", "IDLE", time.Minute)
				return at
			}
		}
		b.Fatal("transcript stream ended")
		return time.Time{}
	}
	var mail, human []time.Duration
	b.ResetTimer()
	for i := range b.N {
		body := fmt.Sprintf("mail %d", i)
		msg, _ := json.Marshal(map[string]string{"to": "b", "body": body})
		start := time.Now()
		if _, err := sup.client.DoRaw(ctx, "POST", client.ResourcePath("agents", "default", "a", "mail"), "application/json", msg); err != nil {
			b.Fatal(err)
		}
		mail = append(mail, await("mail:a", `[Mail from agent "a"]: `+body).Sub(start))

		text := fmt.Sprintf("human %d", i)
		start = time.Now()
		if err := sup.send(ctx, conv, text); err != nil {
			b.Fatal(err)
		}
		human = append(human, await(transcriptwire.SpeakerHuman, text).Sub(start))
	}
	b.StopTimer()
	b.ReportMetric(ms(pct(mail, 50)), "mail-p50-ms")
	b.ReportMetric(ms(pct(mail, 99)), "mail-p99-ms")
	b.ReportMetric(ms(pct(human, 50)), "send-p50-ms")
	b.ReportMetric(ms(pct(human, 99)), "send-p99-ms")
}
