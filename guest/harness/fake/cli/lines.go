package cli

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"strings"
	"time"
)

// runLines is the front end without a TTY: one message per line, replies as
// plain lines. Useful for tests and pipes.
func runLines(s *session, stdin io.Reader, stdout io.Writer) int {
	w := bufio.NewWriter(stdout)
	defer w.Flush()
	for _, l := range s.restored {
		fmt.Fprintln(w, l)
	}
	fmt.Fprintf(w, "session %s\n", s.id)
	if s.instructions != "" {
		fmt.Fprintln(w, s.instructionsLine())
	}
	sc := bufio.NewScanner(stdin)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	prompt := func() {
		fmt.Fprint(w, PromptPrefix)
		_ = w.Flush()
	}
	prompt()
	for sc.Scan() {
		text := strings.TrimRight(sc.Text(), "\r")
		if text == "" {
			prompt()
			continue
		}
		if text == "/exit" {
			return 0
		}
		turn, err := s.userTurn(text)
		if err != nil {
			fmt.Fprintf(os.Stderr, "fake-cli: %v\n", err)
			return 1
		}
		if strings.Contains(text, MarkCrash) {
			_ = w.Flush()
			return 3
		}
		if strings.Contains(text, MarkAsk) {
			fmt.Fprintln(w, PermissionAsk)
			_ = w.Flush()
			answer := "denied"
			if sc.Scan() && strings.HasPrefix(strings.ToLower(strings.TrimSpace(sc.Text())), "y") {
				answer = "granted"
			}
			fmt.Fprintf(w, "permission: %s\n", answer)
		}
		time.Sleep(s.turnDelay(text))
		for _, l := range s.sideEffects(text) {
			fmt.Fprintln(w, l)
		}
		reply := s.replyText(turn, text)
		if err := s.assistantTurn(turn, text, reply); err != nil {
			fmt.Fprintf(os.Stderr, "fake-cli: %v\n", err)
			return 1
		}
		fmt.Fprintln(w, reply)
		prompt()
	}
	return 0
}
