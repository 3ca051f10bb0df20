package toolrelay

import (
	"context"
	"sync"

	"aicli.dev/aicli/guest/ptyapi"
)

// capSet is the in-memory capability set. Tokens are never logged, written to disk or put in an environment.
type capSet struct {
	mu    sync.RWMutex
	tools map[string]string // tool name → token
}

// set replaces the set.
func (c *capSet) set(caps ptyapi.Capabilities) {
	tools := make(map[string]string, len(caps.Tools))
	for _, t := range caps.Tools {
		if t.Name != "" && t.Token != "" {
			tools[t.Name] = t.Token
		}
	}
	c.mu.Lock()
	c.tools = tools
	c.mu.Unlock()
}

// token returns the token for tool (also presented to delegate it).
func (c *capSet) token(tool string) (string, bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	tok, ok := c.tools[tool]
	return tok, ok
}

// Set replaces the relay's capability set; calls already relayed keep the token they were sent with.
func (r *Relay) Set(caps ptyapi.Capabilities) { r.caps.set(caps) }

// SetCapabilities implements ptyapi.CapabilitySetter (the guest API's PUT /v1/capabilities).
func (r *Relay) SetCapabilities(_ context.Context, caps ptyapi.Capabilities) error {
	r.Set(caps)
	return nil
}
