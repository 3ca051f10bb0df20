// Package egress is the supervisor end of default-deny egress: it serves the streams a guest opens over the side
// channel (a gateway.GuestStreamHandler), checks each against the conversation's Policy (the agent's provider
// endpoint plus its allow-list of exact or "*.example.com" hosts and ports), and either reverse-proxies HTTP to
// the provider, dials an allowed host:port and pipes bytes, or refuses — failing closed and reporting the refusal
// through a callback. Nothing is resolved or dialed for a destination the policy does not allow.
package egress
