package builtins

import (
	"context"
	"errors"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"aicli.dev/aicli/apis/v1alpha1"
	"aicli.dev/aicli/internal/grants"
	"aicli.dev/aicli/internal/transcript/transcriptwire"
)

// Transcripts reads committed transcripts (transcript.StoreLog).
type Transcripts interface {
	Read(ctx context.Context, uid string, from int64, limit int) ([]transcriptwire.Entry, error)
}

// RemoteTranscripts reads the transcripts of monitors' remote targets
// (monitor.Service): ok is false when conversation is no remote target
// conversation of an attachment whose monitor is agent.
type RemoteTranscripts interface {
	ReadRemote(ctx context.Context, ns, agent, conversation string, from int64, limit int) (entries []transcriptwire.Entry, ok bool, err error)
}

// transcript-read page sizes.
const (
	defaultReadLimit = 50
	maxReadLimit     = 500
)

// transcriptRead is `transcript-read CONVERSATION [--from CURSOR] [--limit N]`:
// a page of the attributed transcript of a conversation the agent may observe.
func (c *call) transcriptRead(ctx context.Context, raw []string) error {
	if c.s.Transcripts == nil {
		return fail(exitFailed, "this supervisor serves no transcripts")
	}
	a, err := parse(raw, map[string]bool{"from": true, "limit": true})
	if err != nil {
		return err
	}
	if len(a.pos) != 1 {
		return fail(exitUsage, "usage: transcript-read CONVERSATION [--from CURSOR] [--limit N]")
	}
	from, err := a.seq("from")
	if err != nil {
		return err
	}
	limit, err := a.num("limit", defaultReadLimit, maxReadLimit)
	if err != nil {
		return err
	}
	name := a.pos[0]
	conv, err := c.observable(ctx, name)
	var entries []transcriptwire.Entry
	var f *failure
	switch {
	case errors.As(err, &f) && f.code == exitFailed && c.s.Remote != nil:
		// Not here: a remote target conversation of a monitor this agent is.
		var ok bool
		entries, ok, err = c.s.Remote.ReadRemote(ctx, c.auth.Namespace, c.auth.Agent, name, int64(max(from, 1)), int(limit))
		if !ok && err == nil {
			err = f
		}
	case err == nil:
		entries, err = c.s.Transcripts.Read(ctx, string(conv.UID), int64(max(from, 1)), int(limit))
	}
	if err != nil {
		return err
	}
	for _, e := range entries {
		c.printf("#%d %s %s: %s\n", e.Cursor, e.Time.UTC().Format("2006-01-02 15:04:05Z"), e.Speaker,
			strings.ReplaceAll(strings.TrimRight(e.Text, "\n"), "\n", "\n    "))
	}
	switch {
	case len(entries) == 0:
		c.printf("no entries from cursor %d in conversation %s\n", max(from, 1), name)
	case len(entries) == int(limit):
		c.printf("(more: transcript-read %s --from %d)\n", name, entries[len(entries)-1].Cursor+1)
	}
	return nil
}

// observable reads a conversation of the caller's namespace the agent may
// observe: its own agent's, or one its Grants' observe names.
func (c *call) observable(ctx context.Context, name string) (*v1alpha1.Conversation, error) {
	conv := &v1alpha1.Conversation{}
	err := c.s.Client.Get(ctx, c.auth.Namespace, name, conv)
	if apierrors.IsNotFound(err) {
		return nil, fail(exitFailed, "conversation %q does not exist", name)
	} else if err != nil {
		return nil, err
	}
	all, err := c.grants(ctx)
	if err != nil {
		return nil, err
	}
	atts, err := c.attachments(ctx)
	if err != nil {
		return nil, err
	}
	if !grants.MayObserve(c.auth.Agent, all, atts, conv.Spec.AgentRef, conv.Name) {
		return nil, fail(exitRefused, "refused: conversation %q belongs to agent %q, which no Grant of agent %q lets it observe (spec.observe), nor a MonitorAttachment it monitors with",
			name, conv.Spec.AgentRef, c.auth.Agent)
	}
	return conv, nil
}

// attachments lists the caller's namespace's MonitorAttachments (a monitor may observe its targets).
func (c *call) attachments(ctx context.Context) ([]v1alpha1.MonitorAttachment, error) {
	var list v1alpha1.MonitorAttachmentList
	if err := c.s.Client.List(ctx, c.auth.Namespace, &list, nil); err != nil {
		return nil, err
	}
	return list.Items, nil
}
