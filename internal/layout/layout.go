// Package layout names the files and directories under a supervisor's data
// dir, so every part agrees on where things live.
package layout

import (
	"os"
	"path/filepath"
)

// DefaultDataDir is ~/.aicli (or ./.aicli when the home directory is unknown).
func DefaultDataDir() string {
	home, err := os.UserHomeDir()
	if err != nil || home == "" {
		return ".aicli"
	}
	return filepath.Join(home, ".aicli")
}

// Dir is a supervisor data dir.
type Dir string

// Store is the pebble event store.
func (d Dir) Store() string { return filepath.Join(string(d), "store") }

// Socket is the default admin unix socket of the API.
func (d Dir) Socket() string { return filepath.Join(string(d), "supervisor.sock") }

// Tokens is the bearer-token file of the TCP API.
func (d Dir) Tokens() string { return filepath.Join(string(d), "tokens.yaml") }

// TLS is where the TCP API's self-signed certificate and key live.
func (d Dir) TLS() string { return filepath.Join(string(d), "tls") }

// Keys holds the supervisor's long-lived side-channel key.
func (d Dir) Keys() string { return filepath.Join(string(d), "keys") }

// Run holds per-conversation side-channel socket directories.
func (d Dir) Run() string { return filepath.Join(string(d), "run") }

// Agents is the root of every agent's durable directories.
func (d Dir) Agents() string { return filepath.Join(string(d), "agents") }

// AgentHome is an agent's durable home (/home/agent in its containers).
func (d Dir) AgentHome(namespace, agent string) string {
	return filepath.Join(string(d), "agents", namespace, agent, "home")
}

// AgentWorkspace is an agent's durable workspace (/workspace in its containers).
func (d Dir) AgentWorkspace(namespace, agent string) string {
	return filepath.Join(string(d), "agents", namespace, agent, "workspace")
}

// SupervisorID is the file holding the supervisor's stable id.
func (d Dir) SupervisorID() string { return filepath.Join(string(d), "supervisor-id") }

// Secrets holds supervisor-held secrets (model API keys), one file per
// namespace/name, mode 0600.
func (d Dir) Secrets() string { return filepath.Join(string(d), "secrets") }

// Tools holds the per-conversation tool directories (<Tools>/<conversation uid>).
func (d Dir) Tools() string { return filepath.Join(string(d), "tools") }

// CapKeys holds the capability root keys, one file per namespace, mode 0600
// (docs/decisions/0020-capabilities-leases-and-mounted-tools.md).
func (d Dir) CapKeys() string { return filepath.Join(string(d), "capkeys") }

// History holds the transcript history index (derived from the store's
// transcript table; deleting it makes the supervisor rebuild it).
func (d Dir) History() string { return filepath.Join(string(d), "history") }

// Recall holds the recall buckets' search indexes
// (<Recall>/<namespace>/<agent>/<bucket>); derived from the store, rebuilt
// when missing.
func (d Dir) Recall() string { return filepath.Join(string(d), "recall") }
