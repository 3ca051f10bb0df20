package wire

// Bootstrap environment variable names. The supervisor sets all four on a guest container; the guest daemon
// reads them with sidechannel.BootstrapFromEnv.
const (
	// EnvSocket is the side-channel socket path as seen inside the container.
	EnvSocket = "AICLI_SUPERVISOR_SOCKET"
	// EnvFingerprint is the supervisor's pinned key fingerprint ("sha256:<hex>").
	EnvFingerprint = "AICLI_SUPERVISOR_FINGERPRINT"
	// EnvConversationID is the conversation this container runs.
	EnvConversationID = "AICLI_CONVERSATION_ID"
	// EnvLaunchToken is the single-use launch token; sidechannel.BootstrapFromEnv removes it from the environment.
	EnvLaunchToken = "AICLI_LAUNCH_TOKEN"
	// EnvMirrorOutput is optional: "1" makes the supervised guest also copy the CLI's raw output to its stdout,
	// the container's log. Off by default: the supervisor has the stream, and the engine's log capture of a
	// fast-scrolling CLI costs about a CPU core. (The transparent proxy, without a supervisor, always does.)
	EnvMirrorOutput = "AICLI_MIRROR_OUTPUT"
)
