package gateway_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"testing"

	"aicli.dev/aicli/guest/sidechannel"
)

// helperEnv switches the test binary into a guest-fleet helper process (see runGuestFleet).
const helperEnv = "AICLI_GATEWAY_TEST_GUEST_FLEET"

func TestMain(m *testing.M) {
	if os.Getenv(helperEnv) == "1" {
		os.Exit(guestFleet(os.Stdin, os.Stdout))
	}
	os.Exit(m.Run())
}

// guestFleet reads a JSON list of bootstraps, dials every one with the real guest client and serves an echo
// handler on each session, prints "ready", and exits when its stdin closes. Running the guests in another process
// keeps their memory out of the supervisor-side measurement.
func guestFleet(in io.Reader, out io.Writer) int {
	r := bufio.NewReader(in)
	line, err := r.ReadBytes('\n')
	if err != nil {
		_, _ = fmt.Fprintln(out, "read bootstraps:", err)
		return 2
	}
	var boots []sidechannel.Bootstrap
	if err := json.Unmarshal(line, &boots); err != nil {
		_, _ = fmt.Fprintln(out, "decode bootstraps:", err)
		return 2
	}
	sessions := make([]*sidechannel.Session, 0, len(boots))
	for _, b := range boots {
		s, err := sidechannel.Dial(context.Background(), b, quiet)
		if err != nil {
			_, _ = fmt.Fprintln(out, "dial:", err)
			return 1
		}
		sessions = append(sessions, s)
		go func() { _ = http.Serve(s, echoHandler(b.ConversationID)) }()
	}
	_, _ = fmt.Fprintln(out, "ready")
	_, _ = io.Copy(io.Discard, r) // until the parent closes stdin
	for _, s := range sessions {
		_ = s.Close()
	}
	return 0
}
