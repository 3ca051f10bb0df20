package grants

import (
	"slices"
	"sort"

	"aicli.dev/aicli/apis/v1alpha1"
)

// Built-in tools: served by the supervisor itself over the same mounted
// binary, capability and side channel as granted tools (docs/mail.md,
// docs/recall.md).
const (
	MailSend         = "mail-send"
	MailInbox        = "mail-inbox"
	MailPeers        = "mail-peers"
	Remember         = "remember"
	RecallTool       = "recall"
	TranscriptSearch = "transcript-search"
	TranscriptRead   = "transcript-read"
)

// BuiltinNames lists every built-in tool.
var BuiltinNames = []string{MailSend, MailInbox, MailPeers, Remember, RecallTool, TranscriptSearch, TranscriptRead}

// BuiltinGrant is the grant caveat of a built-in tool's token. It cannot be a
// Grant's name (those are DNS labels): a built-in's authority is re-derived
// from the agent and its Grants on every call, not from one Grant's generation.
const BuiltinGrant = "@builtin"

// builtinUsage is each built-in's `--help`.
var builtinUsage = map[string]string{
	MailSend:         `mail-send PEER [TEXT…] — send mail to agent PEER (the text, or stdin when no TEXT is given); mail-peers lists who you may mail`,
	MailInbox:        `mail-inbox [--unread] [--ack] [--limit N] — list your mail, oldest first (--unread: only unread; --ack: mark what is listed as read)`,
	MailPeers:        `mail-peers — list the agents you may send mail to`,
	Remember:         `remember BUCKET [--title T] [--tag T]… [TEXT…] — store a document (the text, or stdin) in recall bucket BUCKET; prints its id`,
	RecallTool:       `recall BUCKET QUERY [--limit N] — full-text search of recall bucket BUCKET (words, "a phrase", +must, -not, field:value)`,
	TranscriptSearch: `transcript-search QUERY [--agent A] [--speaker S] [--since DURATION|TIME] [--limit N] — search your past conversations' transcripts (and those you may observe)`,
	TranscriptRead:   `transcript-read CONVERSATION [--from CURSOR] [--limit N] — read a conversation's attributed transcript from CURSOR (yours, or one you may observe)`,
}

// Builtins returns the built-in tools agent holds, sorted by name:
//   - mail-send, mail-inbox, mail-peers when its spec.peers is set or a Grant names peers;
//   - recall when a Grant names a recall bucket, remember when one grants ReadWrite;
//   - transcript-search and transcript-read when a Grant names observe targets
//     (an agent may then also read its own history).
//
// Which peer, bucket or conversation a call may reach is checked on each call
// (MaySend, Buckets, MayObserve).
func Builtins(agent *v1alpha1.Agent, all []v1alpha1.Grant) []Tool {
	in := held(all, agent.Name)
	has := func(pred func(*v1alpha1.Grant) bool) bool { return slices.ContainsFunc(in, pred) }
	var names []string
	if agent.Spec.Peers != nil || has(func(g *v1alpha1.Grant) bool { return len(g.Spec.Peers) > 0 }) {
		names = append(names, MailSend, MailInbox, MailPeers)
	}
	buckets := Buckets(agent.Name, all)
	if len(buckets) > 0 {
		names = append(names, RecallTool)
	}
	for _, a := range buckets {
		if a == v1alpha1.RecallReadWrite {
			names = append(names, Remember)
			break
		}
	}
	if has(func(g *v1alpha1.Grant) bool { return len(g.Spec.Observe) > 0 }) {
		names = append(names, TranscriptSearch, TranscriptRead)
	}
	sort.Strings(names)
	out := make([]Tool, len(names))
	for i, n := range names {
		out[i] = Tool{ToolGrant: v1alpha1.ToolGrant{Name: n, Usage: builtinUsage[n]}, Grant: BuiltinGrant, Builtin: true}
	}
	return out
}

// IsBuiltin reports whether name is a built-in tool.
func IsBuiltin(name string) bool { return slices.Contains(BuiltinNames, name) }

// Buckets returns the recall buckets agent's Grants name, each with the
// widest access any of them gives (Read unless one says ReadWrite).
func Buckets(agent string, all []v1alpha1.Grant) map[string]v1alpha1.RecallAccess {
	out := map[string]v1alpha1.RecallAccess{}
	for _, g := range held(all, agent) {
		for _, b := range g.Spec.Recall {
			access := b.Access
			if access == "" {
				access = v1alpha1.RecallRead
			}
			if out[b.Name] != v1alpha1.RecallReadWrite {
				out[b.Name] = access
			}
		}
	}
	return out
}

// Observed returns the targets agent's Grants let it observe.
func Observed(agent string, all []v1alpha1.Grant) []v1alpha1.TargetRef {
	var out []v1alpha1.TargetRef
	for _, g := range held(all, agent) {
		out = append(out, g.Spec.Observe...)
	}
	return out
}

// MayObserve reports whether agent may read the transcript of conversation
// conv of targetAgent: its own agent's, or one its Grants' observe names
// (a target without a conversation covers all of that agent's).
func MayObserve(agent string, all []v1alpha1.Grant, targetAgent, conv string) bool {
	if agent == targetAgent {
		return true
	}
	for _, t := range Observed(agent, all) {
		if t.Agent == targetAgent && (t.Conversation == "" || t.Conversation == conv) {
			return true
		}
	}
	return false
}
