package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"
	dockerclient "github.com/docker/docker/client"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"aicli.dev/aicli/apis/v1alpha1"
	"aicli.dev/aicli/controllers"
	"aicli.dev/aicli/internal/client"
	"aicli.dev/aicli/internal/mailbox/mailwire"
	"aicli.dev/aicli/internal/runtime"
	"aicli.dev/aicli/internal/toolcalls"
	"aicli.dev/aicli/internal/transcript/transcriptwire"
)

// check is one invariant: how many items it covered and which broke it.
type check struct {
	name       string
	checked    int
	violations []string
}

func (c *check) fail(format string, args ...any) {
	c.violations = append(c.violations, fmt.Sprintf(format, args...))
}

// verifier reads the supervisor's state after quiescence and checks the invariants against the ledger.
type verifier struct {
	c      *client.Client
	docker *dockerclient.Client
	supID  string
	f      *fleet
	l      *ledger
	ch     *chaos
	// invocationLog is the tool backend's log of call ids.
	invocationLog string

	transcripts map[string][]transcriptwire.Entry // conversation → entries
	inboxes     map[string][]mailwire.Mail        // agent → its whole inbox
	// toolAcks and mailToolAcks are the tool-driven operations whose result the caller saw, by send id.
	toolAcks     map[string]bool
	mailToolAcks map[string]uint64 // send id → the mail's sequence
	// info are figures reported beside the checks.
	info []string
}

// load reads every transcript and inbox once.
func (v *verifier) load(ctx context.Context) error {
	v.transcripts, v.inboxes = map[string][]transcriptwire.Entry{}, map[string][]mailwire.Mail{}
	convs, err := conversations(ctx, v.c)
	if err != nil {
		return err
	}
	for _, conv := range convs {
		entries, err := readTranscript(ctx, v.c, conv.Name)
		if err != nil {
			return err
		}
		v.transcripts[conv.Name] = entries
	}
	for _, agent := range v.f.workers {
		mails, err := readInbox(ctx, v.c, agent)
		if err != nil {
			return err
		}
		v.inboxes[agent] = mails
	}
	return nil
}

func readTranscript(ctx context.Context, c *client.Client, conv string) ([]transcriptwire.Entry, error) {
	var out []transcriptwire.Entry
	for from := int64(1); ; {
		page, err := c.TranscriptPage(ctx, namespace, conv, from, 5000)
		if err != nil {
			return nil, err
		}
		out = append(out, page.Items...)
		if len(page.Items) == 0 {
			return out, nil
		}
		from = page.NextCursor
	}
}

func readInbox(ctx context.Context, c *client.Client, agent string) ([]mailwire.Mail, error) {
	var out []mailwire.Mail
	for after := uint64(0); ; {
		data, err := c.DoRaw(ctx, http.MethodGet, client.ResourcePath("agents", namespace, agent, mailwire.SubInbox)+
			fmt.Sprintf("?after=%d&limit=%d", after, mailwire.MaxLimit), "", nil)
		if err != nil {
			return nil, err
		}
		var page mailwire.Inbox
		if err := json.Unmarshal(data, &page); err != nil {
			return nil, err
		}
		out = append(out, page.Items...)
		if page.Next == 0 {
			return out, nil
		}
		after = page.Next
	}
}

// userEntries are the entries of a transcript that are not the CLI's own (the agent's replies and tool output):
// what was typed into it. Speakers are not trusted here, since attribution is in memory and a supervisor restart
// forgets it.
func userEntries(entries []transcriptwire.Entry) []transcriptwire.Entry {
	var out []transcriptwire.Entry
	for _, e := range entries {
		if e.Speaker != transcriptwire.SpeakerAgent && e.Speaker != transcriptwire.SpeakerTool {
			out = append(out, e)
		}
	}
	return out
}

func agentEntries(entries []transcriptwire.Entry) []transcriptwire.Entry {
	var out []transcriptwire.Entry
	for _, e := range entries {
		if e.Speaker == transcriptwire.SpeakerAgent {
			out = append(out, e)
		}
	}
	return out
}

// sends: every acknowledged send's text is in its conversation's transcript exactly once, in acceptance order;
// an unacknowledged one at most once.
func (v *verifier) sends() *check {
	c := &check{name: "accepted sends in their transcript exactly once, in order"}
	lost, dup := 0, 0
	for conv, sends := range v.l.sendsByConv() {
		seen := map[string][]int64{}
		for _, e := range userEntries(v.transcripts[conv]) {
			t := strings.TrimSpace(e.Text)
			seen[t] = append(seen[t], e.Cursor)
		}
		last := int64(0)
		for _, s := range sends {
			at := seen[s.text]
			if s.acked {
				c.checked++
			}
			switch {
			case s.acked && len(at) == 0:
				lost++
				c.fail("%s: accepted %s %q is not in the transcript", conv, s.kind, s.text)
			case len(at) > 1:
				dup++
				c.fail("%s: %s %q is in the transcript %d times (cursors %v; acknowledged %v)", conv, s.kind, s.text, len(at), at, s.acked)
			case s.acked && at[0] < last:
				c.fail("%s: accepted %s %q at cursor %d, before an earlier accepted send (cursor %d)", conv, s.kind, s.text, at[0], last)
			}
			if s.acked && len(at) > 0 {
				last = at[0]
			}
		}
	}
	if lost+dup > 0 {
		v.info = append(v.info, fmt.Sprintf("sends: %d accepted but lost, %d duplicated", lost, dup))
	}
	return c
}

var (
	toolResult = regexp.MustCompile(`run ` + soakTool + `: exit (\d+): ?(.*)$`)
	mailResult = regexp.MustCompile(`run mail-send: exit 0: sent to ([a-z0-9-]+) \(message #(\d+)\)`)
)

// results reads, from the agents' replies, which tool-driven sends the caller saw a result for.
func (v *verifier) results() {
	v.toolAcks, v.mailToolAcks = map[string]bool{}, map[string]uint64{}
	byText := map[string]*sendRec{}
	v.l.mu.Lock()
	for _, s := range v.l.sends {
		if s.kind == opTool || s.kind == opMailTool {
			byText[s.text] = s
		}
	}
	v.l.mu.Unlock()
	for _, entries := range v.transcripts {
		for _, e := range agentEntries(entries) {
			// The fake CLI's reply: "fake[turn N]: <the message> | run …".
			_, rest, ok := strings.Cut(e.Text, "]: ")
			if !ok {
				continue
			}
			msg, result, ok := strings.Cut(rest, " | ")
			if !ok {
				continue
			}
			s := byText[strings.TrimSpace(msg)]
			if s == nil {
				continue
			}
			switch s.kind {
			case opTool:
				if m := toolResult.FindStringSubmatch(result); m != nil && m[1] == "0" && strings.TrimSpace(m[2]) == "ok t-"+s.id {
					v.toolAcks[s.id] = true
				}
			case opMailTool:
				if m := mailResult.FindStringSubmatch(result); m != nil && m[1] == s.to {
					seq, _ := strconv.ParseUint(m[2], 10, 64)
					v.mailToolAcks[s.id] = seq
				}
			}
		}
	}
	v.l.mu.Lock()
	v.l.acks[opTool], v.l.acks[opMailTool] = len(v.toolAcks), len(v.mailToolAcks)
	v.l.mu.Unlock()
}

// mail: every acknowledged mail (API: 201/200 with its sequence; mail-send: the sequence the caller saw) is in
// its recipient's mailbox exactly once, at that sequence, and each sender's mail to a recipient is in send order.
func (v *verifier) mail() *check {
	c := &check{name: "acknowledged mail in the recipient's mailbox exactly once, in per-sender order"}
	type found struct {
		seq  uint64
		from string
	}
	byBody := map[string][]found{} // recipient/body → occurrences
	for agent, mails := range v.inboxes {
		for _, m := range mails {
			k := agent + "/" + m.Body
			byBody[k] = append(byBody[k], found{m.Seq, m.From})
		}
	}
	expect := func(from, to, body string, seq uint64, acked bool) {
		at := byBody[to+"/"+body]
		if acked {
			c.checked++
		}
		switch {
		case acked && len(at) == 0:
			c.fail("mail %q from %s to %s (seq %d) is not in the mailbox", body, from, to, seq)
		case len(at) > 1:
			c.fail("mail %q from %s to %s is in the mailbox %d times", body, from, to, len(at))
		case acked && (at[0].seq != seq || at[0].from != from):
			c.fail("mail %q: acknowledged as seq %d from %s, stored as seq %d from %s", body, seq, from, at[0].seq, at[0].from)
		}
	}
	// Per-sender order: each sender's acknowledged mail to one recipient has growing sequences in send order.
	type pair struct{ from, to string }
	lastSeq := map[pair]uint64{}
	v.l.mu.Lock()
	mails := append([]*mailRec(nil), v.l.mails...)
	sends := append([]*sendRec(nil), v.l.sends...)
	v.l.mu.Unlock()
	sort.SliceStable(mails, func(i, j int) bool { return mails[i].n < mails[j].n })
	for _, m := range mails {
		expect(m.from, m.to, m.body, m.seq, m.acked)
		if !m.acked {
			continue
		}
		p := pair{m.from, m.to}
		if m.seq <= lastSeq[p] {
			c.fail("mail %q from %s to %s: seq %d after seq %d of an earlier mail", m.body, m.from, m.to, m.seq, lastSeq[p])
		}
		lastSeq[p] = m.seq
	}
	// mail-send from the CLI: per sender, in the order the sends were accepted (the order the CLI ran them).
	lastTool := map[pair]uint64{}
	for _, s := range sends {
		if s.kind != opMailTool {
			continue
		}
		seq, acked := v.mailToolAcks[s.id]
		expect(s.agent, s.to, "mt-"+s.id, seq, acked)
		if !acked {
			continue
		}
		p := pair{s.agent, s.to}
		if seq <= lastTool[p] {
			c.fail("mail-send %q from %s to %s: seq %d after seq %d of an earlier one", "mt-"+s.id, s.agent, s.to, seq, lastTool[p])
		}
		lastTool[p] = seq
	}
	return c
}

// mailShown: every acknowledged mail, read by the delivery into its recipient's live conversation (after
// quiescence nothing is unread), is in that conversation's transcript; more than once is counted, not a violation
// (docs/mail.md: a supervisor crash between a delivery and its read-advance delivers that mail again).
func (v *verifier) mailShown() *check {
	c := &check{name: "delivered mail shown in the recipient's transcript"}
	counts := map[string]map[string]int{} // recipient → body → times shown
	for _, agent := range v.f.workers {
		m := map[string]int{}
		for _, e := range userEntries(v.transcripts[v.f.convs[agent]]) {
			for _, part := range strings.Split(e.Text, "\n") {
				if _, body, ok := strings.Cut(part, "]: "); ok && strings.HasPrefix(part, "[Mail from agent ") {
					m[strings.TrimSpace(body)]++
				}
			}
		}
		counts[agent] = m
	}
	twice := 0
	see := func(to, body string) {
		c.checked++
		switch n := counts[to][body]; {
		case n == 0:
			c.fail("mail %q to %s was delivered (read) but is not in %s's transcript", body, to, v.f.convs[to])
		case n > 1:
			twice++
		}
	}
	v.l.mu.Lock()
	mails := append([]*mailRec(nil), v.l.mails...)
	sends := append([]*sendRec(nil), v.l.sends...)
	v.l.mu.Unlock()
	for _, m := range mails {
		if m.acked {
			see(m.to, m.body)
		}
	}
	for _, s := range sends {
		if _, ok := v.mailToolAcks[s.id]; ok && s.kind == opMailTool {
			see(s.to, "mt-"+s.id)
		}
	}
	v.info = append(v.info, fmt.Sprintf("mail: %d acknowledged mail shown in the recipient's transcript, %d of them more than once", c.checked, twice))
	return c
}

// tools: per conversation, the tool calls its grant recorded as returned (exit 0) against the results its caller
// saw and the backend's own log. A result the caller saw must be counted; a counted call must have run; a
// counted call nobody saw is only possible when a fault cut the caller off (at most one per fault: the fake CLI
// runs one command at a time). The grant's counter must equal the calls its history records.
func (v *verifier) tools(ctx context.Context) *check {
	c := &check{name: "grants' call counts equal the calls whose result the caller saw"}
	invoked, err := readInvocations(v.invocationLog)
	if err != nil {
		c.fail("reading the invocation log: %v", err)
		return c
	}
	var lost, unseen, phantom int
	for _, agent := range v.f.workers {
		conv := v.f.convs[agent]
		data, err := v.c.DoRaw(ctx, http.MethodGet, client.ResourcePath("conversations", namespace, conv, toolcalls.SubToolCalls), "", nil)
		if err != nil {
			c.fail("%s: reading its tool calls: %v", conv, err)
			continue
		}
		var list toolcalls.List
		if err := json.Unmarshal(data, &list); err != nil {
			c.fail("%s: %v", conv, err)
			continue
		}
		recordedOK := 0
		for _, call := range list.Items {
			if call.Tool == soakTool && call.Refused == "" && call.ExitCode == 0 {
				recordedOK++
			}
		}
		seenOK, ran := 0, 0
		prefix := "t-" + agent + "-"
		for id, n := range invoked {
			if strings.HasPrefix(id, prefix) {
				ran += n
			}
		}
		for id := range v.toolAcks {
			if strings.HasPrefix(id, agent+"-") {
				seenOK++
			}
		}
		c.checked += seenOK
		faults := v.ch.faultsHitting(conv)
		switch {
		case recordedOK < seenOK:
			lost += seenOK - recordedOK
			c.fail("%s: the caller saw %d calls return, its grant counted %d", conv, seenOK, recordedOK)
		case recordedOK > ran:
			phantom += recordedOK - ran
			c.fail("%s: the grant counted %d returned calls, the backend ran %d", conv, recordedOK, ran)
		case recordedOK-seenOK > faults:
			unseen += recordedOK - seenOK
			c.fail("%s: the grant counted %d returned calls, the caller saw %d, with only %d faults to explain the difference",
				conv, recordedOK, seenOK, faults)
		default:
			unseen += recordedOK - seenOK
		}
		// The counter against the history it summarises.
		obj, err := v.c.Get(ctx, "grants", namespace, grantName(agent))
		if err != nil {
			c.fail("grant %s: %v", grantName(agent), err)
			continue
		}
		var g v1alpha1.Grant
		if err := client.ToTyped(obj, &g); err != nil {
			c.fail("grant %s: %v", grantName(agent), err)
			continue
		}
		histCalls, histRefused := 0, 0
		for _, call := range list.Items {
			if call.Refused == "" {
				histCalls++
			} else {
				histRefused++
			}
		}
		if int(g.Status.Calls) != histCalls || int(g.Status.Refused) != histRefused {
			c.fail("grant %s: status.calls %d / refused %d, its history records %d / %d", g.Name, g.Status.Calls,
				g.Status.Refused, histCalls, histRefused)
		}
	}
	v.info = append(v.info, fmt.Sprintf("tool calls: %d invoked on the host, %d seen returned by callers; %d counted but "+
		"cut off from their caller by a fault, %d seen but not counted, %d counted but never run",
		len(invoked), len(v.toolAcks), unseen, lost, phantom))
	return c
}

// containers: every container of the supervisor belongs to a conversation that desires Active and is live, and is
// the one its status names; every live conversation has its running container; every worker conversation is live.
func (v *verifier) containers(ctx context.Context) *check {
	c := &check{name: "containers match live conversations (no orphan, none missing)"}
	list, err := v.docker.ContainerList(ctx, container.ListOptions{All: true,
		Filters: filters.NewArgs(filters.Arg("label", runtime.LabelSupervisor+"="+v.supID))})
	if err != nil {
		c.fail("listing containers: %v", err)
		return c
	}
	convs, err := conversations(ctx, v.c)
	if err != nil {
		c.fail("listing conversations: %v", err)
		return c
	}
	byUID := map[string]v1alpha1.Conversation{}
	for _, conv := range convs {
		byUID[string(conv.UID)] = conv
	}
	running := map[string]string{} // conversation uid → running container id
	for _, ctr := range list {
		c.checked++
		uid := ctr.Labels[controllers.LabelConversationUID]
		conv, ok := byUID[uid]
		switch {
		case !ok:
			c.fail("container %s (%s) has no conversation", short(ctr.ID), ctr.Labels[runtime.LabelConversation])
		case conv.Spec.DesiredState != v1alpha1.ConversationActive:
			c.fail("container %s (%s): its conversation is %s", short(ctr.ID), conv.Name, conv.Spec.DesiredState)
		case ctr.State != "running":
			c.fail("container %s (%s) is %s", short(ctr.ID), conv.Name, ctr.State)
		case conv.Status.ContainerID != ctr.ID:
			c.fail("container %s (%s) is not the one its status names (%s)", short(ctr.ID), conv.Name, short(conv.Status.ContainerID))
		case running[uid] != "":
			c.fail("conversation %s has two running containers", conv.Name)
		default:
			running[uid] = ctr.ID
		}
	}
	for _, conv := range convs {
		live := conv.Spec.DesiredState == v1alpha1.ConversationActive && meta(conv.Status.Conditions, v1alpha1.ConditionReady) == metav1.ConditionTrue
		if conv.Spec.DesiredState == v1alpha1.ConversationActive {
			c.checked++
		}
		switch {
		case live && running[string(conv.UID)] == "":
			c.fail("conversation %s is live without a running container", conv.Name)
		case conv.Spec.DesiredState == v1alpha1.ConversationActive && !live:
			c.fail("conversation %s desires Active but is not live (Ready %s)", conv.Name, meta(conv.Status.Conditions, v1alpha1.ConditionReady))
		}
	}
	for _, w := range v.f.workers {
		for _, conv := range convs {
			if conv.Name == v.f.convs[w] && conv.Spec.DesiredState != v1alpha1.ConversationActive {
				c.fail("worker conversation %s is %s after quiescence", conv.Name, conv.Spec.DesiredState)
			}
		}
	}
	return c
}

var triggerRange = regexp.MustCompile(`Target conversation: ([a-z0-9-]+)[\s\S]*Hits: \d+ in entries #(\d+)-#(\d+) \(evaluated up to #(\d+)\)`)

// monitors: no hit wakes a monitor twice: the ranges of the trigger messages of one target never overlap.
func (v *verifier) monitors() *check {
	c := &check{name: "monitor wakes never repeat a hit"}
	byTarget := map[string][]span{}
	triggers := 0
	for _, entries := range v.transcripts {
		for _, e := range entries {
			if !strings.HasPrefix(e.Speaker, transcriptwire.SpeakerTriggerPrefix) && !strings.HasPrefix(e.Text, "[Monitor trigger:") {
				continue
			}
			m := triggerRange.FindStringSubmatch(e.Text)
			if m == nil {
				continue
			}
			triggers++
			from, _ := strconv.ParseInt(m[2], 10, 64)
			to, _ := strconv.ParseInt(m[3], 10, 64)
			byTarget[m[1]] = append(byTarget[m[1]], span{from, to})
		}
	}
	for target, spans := range byTarget {
		sort.Slice(spans, func(i, j int) bool { return spans[i].from < spans[j].from })
		for i := range spans {
			c.checked++
			if i > 0 && spans[i].from <= spans[i-1].to {
				c.fail("%s: hits #%d-#%d woke the monitor again after #%d-#%d", target, spans[i].from, spans[i].to,
					spans[i-1].from, spans[i-1].to)
			}
		}
	}
	// How many keyword sends woke a monitor (a wake in flight when its monitor conversation is cut is lost by design).
	woken, wakes := 0, 0
	for conv, sends := range v.l.sendsByConv() {
		for _, s := range sends {
			if s.kind != opWake || !s.acked {
				continue
			}
			wakes++
			for _, e := range userEntries(v.transcripts[conv]) {
				if strings.TrimSpace(e.Text) == s.text && covered(byTarget[conv], e.Cursor) {
					woken++
					break
				}
			}
		}
	}
	v.info = append(v.info, fmt.Sprintf("monitors: %d trigger messages; %d of %d accepted keyword sends woke a monitor", triggers, woken, wakes))
	return c
}

// span is the range of entries one trigger message covers.
type span struct{ from, to int64 }

func covered(spans []span, cursor int64) bool {
	for _, s := range spans {
		if cursor >= s.from && cursor <= s.to {
			return true
		}
	}
	return false
}

// leak: the supervisor's RSS and goroutines are back within 10 % of the baseline.
func leak(base, final usage) *check {
	c := &check{name: "supervisor anonymous RSS and goroutines within 10% of the baseline", checked: 2}
	if final.RSSBytes > 1.10*base.RSSBytes {
		c.fail("anonymous RSS %.1f MiB, baseline %.1f MiB (+%.0f%%)", final.RSSBytes/(1<<20), base.RSSBytes/(1<<20), 100*(final.RSSBytes/base.RSSBytes-1))
	}
	if final.Goroutines > 1.10*base.Goroutines {
		c.fail("%.0f goroutines, baseline %.0f (+%.0f%%)", final.Goroutines, base.Goroutines, 100*(final.Goroutines/base.Goroutines-1))
	}
	return c
}

func short(id string) string {
	if len(id) > 12 {
		return id[:12]
	}
	return id
}
