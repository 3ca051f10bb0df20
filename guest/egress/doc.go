// Package egress is the guest end of default-deny egress: inside a container that has no network, it listens on
// loopback with a provider port (plain HTTP, reverse-proxied by the supervisor to the agent's provider endpoint)
// and an HTTP forward proxy (CONNECT, and plain-HTTP requests in absolute form), and turns every accepted
// connection into a side-channel stream to the supervisor, which decides and dials. The guest enforces nothing:
// the supervisor is the policy point, and a refusal reaches the client as a 403.
package egress
