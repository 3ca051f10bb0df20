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
	Advise           = "advise"
)

// BuiltinNames lists every built-in tool.
var BuiltinNames = []string{MailSend, MailInbox, MailPeers, Remember, RecallTool, TranscriptSearch, TranscriptRead, Advise}

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
	Advise:           `advise [TEXT…] — (monitor) deliver one piece of advice (the text, or stdin) into the conversation this trigger came from; silence is fine`,
}

// Builtins returns the built-in tools agent holds, sorted by name:
//   - mail-send, mail-inbox, mail-peers when its spec.peers is set or a Grant names peers;
//   - recall when a Grant names a recall bucket, remember when one grants ReadWrite;
//   - transcript-search and transcript-read when a Grant names observe targets
//     or the agent is the monitor of a MonitorAttachment (an agent may then
//     also read its own history);
//   - advise when the agent is the monitor of a MonitorAttachment in Advise
//     mode (may-inject; WatchOnly withholds it).
//
// Which peer, bucket or conversation a call may reach is checked on each call
// (MaySend, Buckets, MayObserve; the monitor service checks advise).
func Builtins(agent *v1alpha1.Agent, all []v1alpha1.Grant, attachments []v1alpha1.MonitorAttachment) []Tool {
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
	if has(func(g *v1alpha1.Grant) bool { return len(g.Spec.Observe) > 0 }) || len(monitoring(agent.Name, attachments, true)) > 0 {
		names = append(names, TranscriptSearch, TranscriptRead)
	}
	if MayAdvise(agent.Name, attachments) {
		names = append(names, Advise)
	}
	sort.Strings(names)
	out := make([]Tool, len(names))
	for i, n := range names {
		out[i] = Tool{ResolvedTool: ResolvedTool{Name: n, Usage: builtinUsage[n]}, Grant: BuiltinGrant, Builtin: true}
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

// Observed returns the targets agent's Grants let it observe, and the local
// targets of the MonitorAttachments whose monitor it is (may-observe).
func Observed(agent string, all []v1alpha1.Grant, attachments []v1alpha1.MonitorAttachment) []v1alpha1.TargetRef {
	var out []v1alpha1.TargetRef
	for _, g := range held(all, agent) {
		out = append(out, g.Spec.Observe...)
	}
	for _, a := range monitoring(agent, attachments, false) {
		out = append(out, v1alpha1.TargetRef{Agent: a.Spec.Target.Agent, Conversation: a.Spec.Target.Conversation})
	}
	return out
}

// MayAdvise reports whether agent is the monitor of a MonitorAttachment (its
// target local or on another supervisor) in Advise mode (may-inject).
func MayAdvise(agent string, attachments []v1alpha1.MonitorAttachment) bool {
	for _, a := range monitoring(agent, attachments, true) {
		if a.Spec.Mode != v1alpha1.MonitorWatchOnly {
			return true
		}
	}
	return false
}

// monitoring returns the attachments whose monitor is agent: those with a
// local target, and with remote ones too when remote is set (a remote
// target's agent name means nothing on this supervisor, so it never grants
// reading a local conversation; transcript-read reaches it through the
// monitor service).
func monitoring(agent string, attachments []v1alpha1.MonitorAttachment, remote bool) []*v1alpha1.MonitorAttachment {
	var out []*v1alpha1.MonitorAttachment
	for i := range attachments {
		a := &attachments[i]
		if a.Spec.Monitor == agent && (remote || a.Spec.Target.Supervisor == nil) && a.DeletionTimestamp == nil {
			out = append(out, a)
		}
	}
	return out
}

// MayObserve reports whether agent may read the transcript of conversation
// conv of targetAgent: its own agent's, one its Grants' observe names (a
// target without a conversation covers all of that agent's), or one a
// MonitorAttachment it is the monitor of watches.
func MayObserve(agent string, all []v1alpha1.Grant, attachments []v1alpha1.MonitorAttachment, targetAgent, conv string) bool {
	if agent == targetAgent {
		return true
	}
	for _, t := range Observed(agent, all, attachments) {
		if t.Agent == targetAgent && (t.Conversation == "" || t.Conversation == conv) {
			return true
		}
	}
	return false
}
