// Command aicli-tool is the one static binary behind every mounted tool (docs/decisions/0020). Invoked through a
// symlink named after a granted tool (greet → aicli-tool) or as `aicli-tool TOOL ARGS…`, it sends the call to the
// guest's tool relay (the unix socket in AICLI_TOOL_SOCKET), streams its standard input there, copies the tool's
// output to its own and exits with the tool's exit code. `TOOL --help` prints the tool's usage;
// `aicli-tool delegate PEER TOOL [--param k=v]… [--calls-per-hour N] [--ttl DURATION]` delegates a narrowed grant
// of TOOL to a peer agent.
package main

import (
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"

	"aicli.dev/aicli/guest/toolwire"
)

// self is the binary's own name, under which it is not a tool.
const self = "aicli-tool"

func main() {
	os.Exit(run(os.Args, os.Getenv(toolwire.EnvSocket), os.Stdin, os.Stdout, os.Stderr))
}

// run is the whole command; it returns the exit code.
func run(argv []string, socket string, stdin *os.File, stdout, stderr io.Writer) int {
	req, err := parse(filepath.Base(argv[0]), argv[1:])
	if err != nil {
		fmt.Fprintf(stderr, "%s: %v\n", self, err)
		return 2
	}
	if socket == "" {
		fmt.Fprintf(stderr, "%s: %s is not set: tools run only inside an AiCli conversation\n", req.Tool, toolwire.EnvSocket)
		return toolwire.ExitNotGranted
	}
	if err := toolwire.CheckArgs(req.Args); err != nil {
		fmt.Fprintf(stderr, "%s: %v\n", req.Tool, err)
		return toolwire.ExitRefused
	}
	c, err := net.Dial("unix", socket)
	if err != nil {
		fmt.Fprintf(stderr, "%s: cannot reach the tool relay: %v\n", req.Tool, err)
		return toolwire.ExitRefused
	}
	defer func() { _ = c.Close() }()
	if err := toolwire.WriteJSON(c, toolwire.TypeRequest, req); err != nil {
		fmt.Fprintf(stderr, "%s: %v\n", req.Tool, err)
		return toolwire.ExitRefused
	}
	go sendStdin(c, stdin, req.Op == toolwire.OpCall)
	return receive(c, req.Tool, stdout, stderr)
}

// sendStdin streams stdin as Stdin frames and then StdinEOF; a terminal (or a help/delegate request) sends EOF at
// once. Write errors end it quietly: the relay's Exit frame tells what happened.
func sendStdin(w io.Writer, stdin *os.File, call bool) {
	if call && stdin != nil && !isTerminal(stdin) {
		buf := make([]byte, toolwire.MaxDataPayload)
		for {
			n, err := stdin.Read(buf)
			if n > 0 {
				if werr := toolwire.WriteFrame(w, toolwire.TypeStdin, buf[:n]); werr != nil {
					return
				}
			}
			if err != nil {
				break
			}
		}
	}
	_ = toolwire.WriteFrame(w, toolwire.TypeStdinEOF, nil)
}

// isTerminal reports whether f is a character device (a terminal, or /dev/null: nothing to send either way).
func isTerminal(f *os.File) bool {
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

// receive copies output frames until Exit and returns its code.
func receive(r io.Reader, tool string, stdout, stderr io.Writer) int {
	for {
		f, err := toolwire.ReadFrame(r)
		if err != nil {
			fmt.Fprintf(stderr, "%s: the call ended without an exit status: %v\n", tool, err)
			return toolwire.ExitRefused
		}
		switch f.Type {
		case toolwire.TypeStdout:
			_, _ = stdout.Write(f.Payload)
		case toolwire.TypeStderr:
			_, _ = stderr.Write(f.Payload)
		case toolwire.TypeExit:
			var ex toolwire.Exit
			if err := toolwire.Decode(f, &ex); err != nil {
				fmt.Fprintf(stderr, "%s: %v\n", tool, err)
				return toolwire.ExitRefused
			}
			if ex.Message != "" {
				fmt.Fprintln(stderr, ex.Message)
			}
			return ex.Code
		default:
			fmt.Fprintf(stderr, "%s: unexpected %s frame\n", tool, f.Type)
			return toolwire.ExitRefused
		}
	}
}
