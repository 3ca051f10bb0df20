package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"aicli.dev/aicli/internal/layout"
	"aicli.dev/aicli/internal/mailbox/mailwire"
)

const mailAPI = "http://supervisor/apis/aicli.dev/v1alpha1/namespaces/default/agents/"

// TestKill9MailFlood floods 10,000 messages through the mail API at an
// offline agent from several senders, kills the real supervisor binary with
// SIGKILL mid-flood, and checks after the restart that every acknowledged
// message is in the inbox with its acknowledged sequence, in per-sender send
// order. The senders then retry everything unacknowledged with the same
// idempotency keys: the inbox ends with exactly 10,000 messages, each once.
func TestKill9MailFlood(t *testing.T) {
	if testing.Short() {
		t.Skip("floods a real supervisor")
	}
	const senders, perSender, killAfter = 4, 2500, 3000
	dataDir := t.TempDir()
	cmd := startSupervisorBin(t, dataDir)
	client := waitForSocket(t, layout.Dir(dataDir).Socket())
	createAgent(t, client, "b", "")
	for s := range senders {
		createAgent(t, client, fmt.Sprint("s", s), `,"peers":{"sendTo":{"agents":["b"]}}`)
	}

	acked := make([]map[int]uint64, senders) // sender → index → seq
	var mu sync.Mutex
	n := 0
	enough := make(chan struct{})
	start := time.Now()
	var wg sync.WaitGroup
	for s := range senders {
		acked[s] = map[int]uint64{}
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range perSender {
				sent, err := sendMail(client, s, i)
				if err != nil {
					return // killed
				}
				mu.Lock()
				acked[s][i] = sent.Seq
				if n++; n == killAfter {
					close(enough)
				}
				mu.Unlock()
			}
		}()
	}
	select {
	case <-enough:
	case <-time.After(60 * time.Second):
		t.Fatalf("only %d sends acknowledged in 60s", n)
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	wg.Wait()
	total := 0
	for s := range senders {
		total += len(acked[s])
	}
	t.Logf("%d sends acknowledged before kill -9 (%d senders, %.0f sends/s through the API)", total, senders,
		float64(killAfter)/time.Since(start).Seconds())

	restart := time.Now()
	startSupervisorBin(t, dataDir)
	client = waitForSocket(t, layout.Dir(dataDir).Socket())
	t.Logf("restarted and serving in %v", time.Since(restart).Round(time.Millisecond))
	got := readInbox(t, client, "b")
	checkFlood(t, got, senders, func(s, i int) (uint64, bool) { seq, ok := acked[s][i]; return seq, ok })

	// Retry what was not acknowledged, with the same keys.
	retry := time.Now()
	for s := range senders {
		for i := range perSender {
			if _, ok := acked[s][i]; ok {
				continue
			}
			sent, err := sendMail(client, s, i)
			if err != nil {
				t.Fatal(err)
			}
			acked[s][i] = sent.Seq
		}
	}
	t.Logf("retries (one sender at a time) took %v", time.Since(retry).Round(time.Millisecond))
	read := time.Now()
	got = readInbox(t, client, "b")
	t.Logf("read %d messages in pages of %d in %v", len(got), mailwire.MaxLimit, time.Since(read).Round(time.Millisecond))
	if len(got) != senders*perSender {
		t.Fatalf("%d messages after the retries, want exactly %d (idempotency keys)", len(got), senders*perSender)
	}
	checkFlood(t, got, senders, func(s, i int) (uint64, bool) { seq, ok := acked[s][i]; return seq, ok })
	// The offline agent shows its backlog.
	deadline := time.Now().Add(20 * time.Second)
	for {
		var a struct {
			Status struct {
				InboxUnread int `json:"inboxUnread"`
			} `json:"status"`
		}
		getJSON(t, client, mailAPI+"b", &a)
		if a.Status.InboxUnread == senders*perSender {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("status.inboxUnread = %d, want %d", a.Status.InboxUnread, senders*perSender)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// checkFlood checks that every acknowledged message is present with its
// sequence, and that each sender's messages are in send order.
func checkFlood(t *testing.T, got []mailwire.Mail, senders int, ackedSeq func(s, i int) (uint64, bool)) {
	t.Helper()
	next := make([]int, senders)
	present := map[string]uint64{}
	for k, m := range got {
		if k > 0 && m.Seq <= got[k-1].Seq {
			t.Fatalf("inbox out of sequence order at %d", k)
		}
		var s, i int
		if _, err := fmt.Sscanf(m.Body, "s%d-%d", &s, &i); err != nil {
			t.Fatalf("body %q: %v", m.Body, err)
		}
		if m.From != fmt.Sprint("s", s) || i != next[s] {
			t.Fatalf("from %s found %q, want index %d (per-sender order)", m.From, m.Body, next[s])
		}
		next[s]++
		present[m.Body] = m.Seq
	}
	for s := range senders {
		for i := 0; ; i++ {
			seq, ok := ackedSeq(s, i)
			if !ok {
				if _, later := ackedSeq(s, i+1); !later {
					break
				}
				continue
			}
			if got, found := present[fmt.Sprintf("s%d-%d", s, i)]; !found || got != seq {
				t.Fatalf("acknowledged s%d-%d (seq %d) lost after kill -9 (found %v, seq %d)", s, i, seq, found, got)
			}
		}
	}
}

func startSupervisorBin(t *testing.T, dataDir string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(supervisorBin, "--data-dir", dataDir)
	cmd.Stderr = io.Discard
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }) // our own child, by PID
	return cmd
}

func createAgent(t *testing.T, c *http.Client, name, extraSpec string) {
	t.Helper()
	body := fmt.Sprintf(`{"apiVersion":"aicli.dev/v1alpha1","kind":"Agent","metadata":{"name":%q},"spec":{"harness":"fake"%s}}`, name, extraSpec)
	resp, err := c.Post(strings.TrimSuffix(mailAPI, "/"), "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusCreated {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("create agent %s: %d %s", name, resp.StatusCode, b)
	}
}

func sendMail(c *http.Client, s, i int) (mailwire.SendResponse, error) {
	id := fmt.Sprintf("s%d-%d", s, i)
	body, _ := json.Marshal(mailwire.SendRequest{To: "b", Body: id, IdempotencyKey: id})
	resp, err := c.Post(mailAPI+fmt.Sprint("s", s)+"/mail", "application/json", strings.NewReader(string(body)))
	if err != nil {
		return mailwire.SendResponse{}, err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		return mailwire.SendResponse{}, err
	}
	if resp.StatusCode != http.StatusCreated && resp.StatusCode != http.StatusOK {
		return mailwire.SendResponse{}, fmt.Errorf("send %s: %d %s", id, resp.StatusCode, data)
	}
	var sent mailwire.SendResponse
	return sent, json.Unmarshal(data, &sent)
}

func readInbox(t *testing.T, c *http.Client, agent string) []mailwire.Mail {
	t.Helper()
	var all []mailwire.Mail
	after := uint64(0)
	for {
		var page mailwire.Inbox
		getJSON(t, c, fmt.Sprintf("%s%s/inbox?limit=%d&after=%d", mailAPI, agent, mailwire.MaxLimit, after), &page)
		all = append(all, page.Items...)
		if page.Next == 0 {
			return all
		}
		after = page.Next
	}
}

func getJSON(t *testing.T, c *http.Client, url string, v any) {
	t.Helper()
	resp, err := c.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %d %s", url, resp.StatusCode, data)
	}
	if err := json.Unmarshal(data, v); err != nil {
		t.Fatal(err)
	}
}
