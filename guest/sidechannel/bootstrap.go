package sidechannel

import (
	"errors"
	"fmt"
	"os"
	"strings"

	"aicli.dev/aicli/guest/sidechannel/wire"
)

// Bootstrap is what a guest needs to dial its supervisor.
type Bootstrap struct {
	// SocketPath is the unix socket to dial (normally /run/aicli/gw.sock).
	SocketPath string
	// SupervisorFingerprint pins the supervisor's key; any other server is refused.
	SupervisorFingerprint string
	// ConversationID is presented in the hello.
	ConversationID string
	// LaunchToken is presented once, in the first hello.
	LaunchToken string
	// Outbound, when set, is kept pointing at Serve's current session so guest components can open streams to
	// the supervisor (see Outbound). It is not part of the bootstrap environment.
	Outbound *Outbound `json:"-"`
}

// Validate checks that every field is present and well-formed.
func (b Bootstrap) Validate() error {
	var errs []error
	if b.SocketPath == "" {
		errs = append(errs, fmt.Errorf("%s: socket path is empty", wire.EnvSocket))
	}
	if !wire.ValidFingerprint(b.SupervisorFingerprint) {
		errs = append(errs, fmt.Errorf("%s: want %s<64 lower-case hex digits>", wire.EnvFingerprint, wire.FingerprintPrefix))
	}
	if b.ConversationID == "" {
		errs = append(errs, fmt.Errorf("%s: conversation id is empty", wire.EnvConversationID))
	}
	if b.LaunchToken == "" {
		errs = append(errs, fmt.Errorf("%s: launch token is empty", wire.EnvLaunchToken))
	}
	return errors.Join(errs...)
}

// BootstrapFromEnv reads the bootstrap variables. ok is false (and err nil) when none is set: the guest then runs
// unsupervised. A partial or malformed set is an error. In every case where the launch token variable was set it
// is removed from the process environment, so children (the AI CLI) never inherit it.
func BootstrapFromEnv() (b Bootstrap, ok bool, err error) {
	names := []string{wire.EnvSocket, wire.EnvFingerprint, wire.EnvConversationID, wire.EnvLaunchToken}
	vals := make(map[string]string, len(names))
	var missing []string
	for _, n := range names {
		v, set := os.LookupEnv(n)
		if set {
			vals[n] = strings.TrimSpace(v)
		} else {
			missing = append(missing, n)
		}
	}
	if _, set := os.LookupEnv(wire.EnvLaunchToken); set {
		if err := os.Unsetenv(wire.EnvLaunchToken); err != nil {
			return Bootstrap{}, false, fmt.Errorf("scrub %s: %w", wire.EnvLaunchToken, err)
		}
	}
	if len(vals) == 0 {
		return Bootstrap{}, false, nil
	}
	if len(missing) > 0 {
		return Bootstrap{}, false, fmt.Errorf("side-channel bootstrap is partial: missing %s", strings.Join(missing, ", "))
	}
	b = Bootstrap{
		SocketPath:            vals[wire.EnvSocket],
		SupervisorFingerprint: vals[wire.EnvFingerprint],
		ConversationID:        vals[wire.EnvConversationID],
		LaunchToken:           vals[wire.EnvLaunchToken],
	}
	if err := b.Validate(); err != nil {
		return Bootstrap{}, false, fmt.Errorf("side-channel bootstrap: %w", err)
	}
	return b, true, nil
}
