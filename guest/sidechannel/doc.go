// Package sidechannel is the guest end of the supervisor–guest side channel: it reads the bootstrap environment,
// dials the supervisor's unix socket with mutual TLS 1.3 (pinning the supervisor's key fingerprint and presenting
// an ephemeral ed25519 key minted in memory), presents the conversation id and single-use launch token, and then
// serves the streams the supervisor opens over a yamux session as a net.Listener. The guest may open streams the
// other way too (Session.Open, Outbound): the supervisor hands those to its guest-stream handler (the egress
// proxy).
//
// Reconnect: the supervisor answers the first, token-authenticated hello with a reconnect secret bound to this
// conversation and this guest key. The guest keeps the secret and its key in memory only; when the connection
// drops (for example because the supervisor restarted), Session.Redial — used by Serve — dials again with the
// same key and the secret instead of the already-spent launch token. A supervisor accepts it only for the same
// conversation and the same key fingerprint.
package sidechannel
