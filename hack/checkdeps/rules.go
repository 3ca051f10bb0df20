package main

// linkRule forbids a binary from linking packages: Forbidden entries match a
// package and its sub-packages; "{module}/" stands for the module's path.
type linkRule struct {
	Binary    string // package pattern of the main package, e.g. ./cmd/aictl
	Forbidden []forbidden
}

type forbidden struct {
	Path string
	Why  string
}

// importRule limits what the packages matching Packages import directly
// (test files included): the standard library and the Allowed prefixes only.
type importRule struct {
	Packages string // package pattern, e.g. ./apis/...
	Allowed  []string
	Why      string
}

// linkRules and importRules are the project's boundaries.
var (
	linkRules = []linkRule{{
		Binary: "./cmd/aictl",
		Forbidden: []forbidden{
			{"{module}/internal/store", "the supervisor's event store"},
			{"{module}/internal/apiserver", "the supervisor's API server"},
			{"github.com/cockroachdb/pebble", "the store's storage engine"},
			{"github.com/prometheus", "the supervisor's metrics"},
		},
	}, {
		// The consoles use only the public API through internal/client.
		Binary: "./internal/client",
		Forbidden: []forbidden{
			{"{module}/internal/store", "the supervisor's event store"},
			{"{module}/internal/apiserver", "the supervisor's API server"},
			{"{module}/internal/runtime", "the supervisor's container runtime"},
			{"github.com/docker", "the Docker engine client"},
			{"github.com/cockroachdb/pebble", "the store's storage engine"},
			{"github.com/prometheus", "the supervisor's metrics"},
		},
	}, {
		// The consoles hold no agent state: they use only the supervisors' public API (internal/client).
		Binary: "./cmd/aicli-console",
		Forbidden: []forbidden{
			{"{module}/internal/store", "the supervisor's event store"},
			{"{module}/internal/apiserver", "the supervisor's API server"},
			{"{module}/internal/supervisor", "the supervisor itself"},
			{"{module}/controllers", "the supervisor's reconcilers"},
			{"github.com/cockroachdb/pebble", "the store's storage engine"},
			{"github.com/docker", "the Docker engine client"},
			{"github.com/prometheus", "the supervisor's metrics"},
		},
	}}
	importRules = []importRule{{
		Packages: "./apis/...",
		Allowed:  []string{"k8s.io/apimachinery", "{module}/apis"},
		Why:      "apis/ may import only the standard library and k8s.io/apimachinery",
	}}
)
