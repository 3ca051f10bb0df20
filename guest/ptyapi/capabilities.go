package ptyapi

import "context"

// ToolCap is one granted tool as the guest holds it: the name the CLI runs, its usage line and the capability
// token the guest presents for it (docs/decisions/0020). Tokens live only in the guest's memory.
type ToolCap struct {
	// Name is the executable name.
	Name string `json:"name"`
	// Usage is the one-line usage of the tool.
	Usage string `json:"usage,omitempty"`
	// Token is the capability presented with each call.
	Token string `json:"token"`
}

// Capabilities is the whole set the supervisor pushes; each push replaces the previous set.
type Capabilities struct {
	// Tools are the granted tools. `aicli-tool delegate PEER TOOL` presents
	// TOOL's own token: holding a tool is the authority to delegate a
	// narrower slice of it.
	Tools []ToolCap `json:"tools"`
}

// CapabilitySetter holds a guest's capabilities. There is deliberately no getter: a token is never read back.
type CapabilitySetter interface {
	SetCapabilities(ctx context.Context, caps Capabilities) error
}
