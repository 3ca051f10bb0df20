// Package authority is the supervisor's side of the agent as a capability
// principal (docs/decisions/0020): the lease Manager mints each live
// conversation's capability tokens from its agent's Grants, pushes them into
// the guest's memory and renews them while the guest connection lives; the
// Authorizer checks every tool call (lease, token, revocation, quota) and
// resolves the backend's secrets; the Recorder turns each call into an event
// on its Grant; the Delegator lets an agent hand a narrower slice of a tool
// to a peer.
package authority
