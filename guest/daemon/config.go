package daemon

import (
	"fmt"
	"os"
	"strconv"
	"time"

	scwire "aicli.dev/aicli/guest/sidechannel/wire"

	"aicli.dev/aicli/guest/ptyhost"
	"aicli.dev/aicli/guest/toolwire"
)

// Environment variables the guest reads (besides the side-channel bootstrap).
const (
	EnvHarness   = "AICLI_HARNESS"    // default harness in transparent mode (default "fake")
	EnvFakeCLI   = "AICLI_FAKE_CLI"   // fake CLI executable (default "aicli-fake-cli" on PATH)
	EnvHome      = "AICLI_HOME"       // CLI home (default /home/agent)
	EnvWorkDir   = "AICLI_WORKDIR"    // CLI working directory (default /workspace, else the home)
	EnvUID       = "AICLI_CLI_UID"    // CLI user id (default 1000 when the guest is root)
	EnvGID       = "AICLI_CLI_GID"    // CLI group id (default = uid)
	EnvStopGrace = "AICLI_STOP_GRACE" // SIGTERM→SIGKILL grace for the CLI (default 3s)
	EnvLinger    = "AICLI_EXIT_LINGER"
	// EnvMirrorOutput ("1" or "0", default "0") says whether a supervised guest also copies the CLI's raw output
	// to its stdout (see scwire.EnvMirrorOutput).
	EnvMirrorOutput = scwire.EnvMirrorOutput
	// EnvToolSocket is where a supervised guest's tool relay listens (default toolwire.DefaultSocketPath; "off"
	// serves no tools). The CLI gets the path in the same variable.
	EnvToolSocket = toolwire.EnvSocket
)

// Config is the guest daemon's configuration.
type Config struct {
	Harness string
	FakeCLI string
	Home    string
	WorkDir string
	// RunAs is nil when the guest is not root (the CLI then runs as the guest's user).
	RunAs     *ptyhost.Credential
	StopGrace time.Duration
	// ExitLinger is how long a supervised guest keeps serving after the CLI
	// exits, so the supervisor can read the final status and screen.
	ExitLinger time.Duration
	// MirrorSupervised copies the CLI's output to stdout in supervised mode too.
	MirrorSupervised bool
	// ToolSocket is the tool relay's socket in supervised mode; empty serves no tools.
	ToolSocket string
}

// ConfigFromEnv reads the configuration from the environment.
func ConfigFromEnv() (Config, error) {
	c := Config{
		Harness: envOr(EnvHarness, "fake"), FakeCLI: envOr(EnvFakeCLI, "aicli-fake-cli"),
		Home: envOr(EnvHome, ptyhost.DefaultHome), WorkDir: os.Getenv(EnvWorkDir),
		ToolSocket: envOr(EnvToolSocket, toolwire.DefaultSocketPath),
	}
	if c.ToolSocket == "off" {
		c.ToolSocket = ""
	}
	if c.WorkDir == "" {
		c.WorkDir = ptyhost.DefaultWorkDir
		if st, err := os.Stat(c.WorkDir); err != nil || !st.IsDir() {
			c.WorkDir = c.Home
		}
	}
	var err error
	if c.StopGrace, err = durationEnv(EnvStopGrace, ptyhost.DefaultStopGrace); err != nil {
		return c, err
	}
	if c.ExitLinger, err = durationEnv(EnvLinger, 3*time.Second); err != nil {
		return c, err
	}
	switch v := os.Getenv(EnvMirrorOutput); v {
	case "", "0":
	case "1":
		c.MirrorSupervised = true
	default:
		return c, fmt.Errorf("%s=%q: want 1 or 0", EnvMirrorOutput, v)
	}
	if os.Geteuid() == 0 {
		uid, err := uintEnv(EnvUID, 1000)
		if err != nil {
			return c, err
		}
		gid, err := uintEnv(EnvGID, uid)
		if err != nil {
			return c, err
		}
		if uid == 0 {
			return c, fmt.Errorf("%s=0: the CLI must not run as root", EnvUID)
		}
		c.RunAs = &ptyhost.Credential{UID: uid, GID: gid}
	}
	return c, nil
}

func envOr(k, def string) string {
	if v := os.Getenv(k); v != "" {
		return v
	}
	return def
}

func durationEnv(k string, def time.Duration) (time.Duration, error) {
	v := os.Getenv(k)
	if v == "" {
		return def, nil
	}
	d, err := time.ParseDuration(v)
	if err != nil || d < 0 {
		return 0, fmt.Errorf("%s=%q: want a non-negative duration", k, v)
	}
	return d, nil
}

func uintEnv(k string, def uint32) (uint32, error) {
	v := os.Getenv(k)
	if v == "" {
		return def, nil
	}
	n, err := strconv.ParseUint(v, 10, 32)
	if err != nil {
		return 0, fmt.Errorf("%s=%q: %w", k, v, err)
	}
	return uint32(n), nil
}
