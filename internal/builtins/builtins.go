// Package builtins serves the built-in tools (grants.Builtins) on the
// supervisor: mail-send, mail-inbox and mail-peers over the post office and
// the mailbox, remember and recall over the agent's recall buckets,
// transcript-read and transcript-search over the committed transcripts,
// advise through the monitor service. They
// arrive like any mounted tool (a capability-checked side-channel stream, see
// internal/tools); each call checks what it reaches (a peer, a bucket, a
// conversation) against the agent's peer policy and Grants as they are now.
package builtins

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	"aicli.dev/aicli/guest/toolwire"
	"aicli.dev/aicli/internal/grants"
	"aicli.dev/aicli/internal/storeclient"
	"aicli.dev/aicli/internal/tools"
)

// Exit codes of the built-ins, besides toolwire's.
const (
	exitOK      = 0
	exitFailed  = 1 // the call could not do what was asked (bad input, nothing found)
	exitUsage   = 2 // the arguments do not parse
	exitRefused = toolwire.ExitRefused
)

// Server runs the built-in tools; it implements tools.Builtins. Each part is
// optional: a tool whose part is missing fails with a clear message.
type Server struct {
	// Client reads agents, grants and conversations.
	Client *storeclient.Client
	// Office sends mail; Mailbox reads inboxes.
	Office  Office
	Mailbox Mailbox
	// Recall holds the agents' recall buckets.
	Recall Recall
	// Transcripts reads committed transcripts; History searches them.
	Transcripts Transcripts
	History     History
	// Advisor delivers monitors' advice (the advise built-in).
	Advisor Advisor
	// Remote reads monitors' remote target conversations (transcript-read).
	Remote RemoteTranscripts
}

var _ tools.Builtins = (*Server)(nil)

// call is one built-in call.
type call struct {
	s              *Server
	auth           *tools.Authorization
	stdin          io.Reader
	stdout, stderr io.Writer
}

// failure ends a call with a message on stderr and an exit code.
type failure struct {
	code int
	msg  string
}

func (f *failure) Error() string { return f.msg }

func fail(code int, format string, args ...any) error {
	return &failure{code: code, msg: fmt.Sprintf(format, args...)}
}

// Run implements tools.Builtins.
func (s *Server) Run(ctx context.Context, auth *tools.Authorization, stdin io.Reader, stdout, stderr io.Writer) (int, error) {
	c := &call{s: s, auth: auth, stdin: stdin, stdout: stdout, stderr: stderr}
	run := map[string]func(context.Context, []string) error{
		grants.MailSend: c.mailSend, grants.MailInbox: c.mailInbox, grants.MailPeers: c.mailPeers,
		grants.Remember: c.remember, grants.RecallTool: c.recall,
		grants.TranscriptRead: c.transcriptRead, grants.TranscriptSearch: c.transcriptSearch,
		grants.Advise: c.advise,
	}[auth.Tool.Name]
	if run == nil {
		return toolwire.ExitNotGranted, fmt.Errorf("%s is not a built-in tool", auth.Tool.Name)
	}
	err := run(ctx, auth.Args)
	var f *failure
	switch {
	case err == nil:
		return exitOK, nil
	case errors.As(err, &f):
		_, _ = fmt.Fprintf(stderr, "%s: %s\n", auth.Tool.Name, f.msg)
		return f.code, nil
	default:
		return 0, err // the tool server reports it as a backend failure
	}
}

func (c *call) printf(format string, args ...any) { _, _ = fmt.Fprintf(c.stdout, format, args...) }

// args are a call's parsed arguments: flags may come anywhere ("--k=v",
// "--k v", or "--b" for a switch); "--" ends them.
type args struct {
	pos   []string
	flags map[string][]string
}

// parse parses raw against the flags a tool takes (name → takes a value).
func parse(raw []string, spec map[string]bool) (args, error) {
	a := args{flags: map[string][]string{}}
	for i := 0; i < len(raw); i++ {
		r := raw[i]
		if r == "--" {
			a.pos = append(a.pos, raw[i+1:]...)
			break
		}
		if !strings.HasPrefix(r, "--") || len(r) == 2 {
			a.pos = append(a.pos, r)
			continue
		}
		name, val, hasVal := strings.Cut(r[2:], "=")
		takesVal, ok := spec[name]
		switch {
		case !ok:
			return args{}, fail(exitUsage, "unknown flag --%s (see --help)", name)
		case takesVal && !hasVal:
			if i+1 >= len(raw) {
				return args{}, fail(exitUsage, "--%s needs a value", name)
			}
			i++
			val = raw[i]
		case !takesVal && hasVal:
			return args{}, fail(exitUsage, "--%s takes no value", name)
		}
		a.flags[name] = append(a.flags[name], val)
	}
	return a, nil
}

func (a args) has(name string) bool { return len(a.flags[name]) > 0 }

func (a args) str(name string) string {
	if v := a.flags[name]; len(v) > 0 {
		return v[len(v)-1]
	}
	return ""
}

// num reads a positive integer flag, def when absent, capped at max.
func (a args) num(name string, def, max int64) (int64, error) {
	v := a.str(name)
	if v == "" {
		return def, nil
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n < 1 {
		return 0, fail(exitUsage, "--%s %q: want a positive number", name, v)
	}
	return min(n, max), nil
}

// seq reads a sequence or cursor flag (0 when absent).
func (a args) seq(name string) (uint64, error) {
	v := a.str(name)
	if v == "" {
		return 0, nil
	}
	n, err := strconv.ParseUint(v, 10, 63)
	if err != nil {
		return 0, fail(exitUsage, "--%s %q: want a number", name, v)
	}
	return n, nil
}

// text is the positional arguments from i joined by spaces, or, when there
// are none, stdin (at most limit bytes; one trailing newline dropped).
func (c *call) text(a args, i, limit int, what string) (string, error) {
	if len(a.pos) > i {
		return strings.Join(a.pos[i:], " "), nil
	}
	b, err := io.ReadAll(io.LimitReader(c.stdin, int64(limit)+1))
	if err != nil {
		return "", err
	}
	if len(b) > limit {
		return "", fail(exitFailed, "the %s on stdin exceeds %d bytes; nothing was stored", what, limit)
	}
	return strings.TrimSuffix(strings.TrimSuffix(string(b), "\n"), "\r"), nil
}
