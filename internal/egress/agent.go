package egress

import (
	"aicli.dev/aicli/apis/v1alpha1"
)

// AgentPolicy builds the egress Policy of an Agent's conversations from its spec: the provider endpoint and the
// egress allow-list. An error names the offending entry; the controller reports it (the agent cannot run with an
// unparseable policy: fail closed).
func AgentPolicy(spec v1alpha1.AgentSpec) (Policy, error) {
	var allow []string
	if spec.Egress != nil {
		allow = spec.Egress.Allow
	}
	return NewPolicy(spec.Provider.Endpoint, allow)
}
