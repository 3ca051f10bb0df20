package toolwire

// EnvSocket names the unix socket of the guest's tool relay in the CLI's environment; aicli-tool connects to it.
const EnvSocket = "AICLI_TOOL_SOCKET"

// DefaultSocketPath is where the guest's tool relay listens inside the container: under /tmp (a tmpfs the guest
// creates the directory in before the CLI starts, so the CLI user can reach the socket but not replace it), not
// under the side-channel directory, which only the guest may enter.
const DefaultSocketPath = "/tmp/aicli-tools/tool.sock"
