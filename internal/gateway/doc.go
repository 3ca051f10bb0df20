// Package gateway is the supervisor end of the supervisor–guest side channel: per conversation it listens on a
// unix socket in a directory that is bind-mounted into the guest container, terminates mutual TLS 1.3 with the
// supervisor's long-lived ed25519 key, admits a guest that presents the conversation id and a single-use launch
// token, and then drives the guest with HTTP requests over yamux streams on the same connection.
//
// Protocol (shared with the guest through package guest/sidechannel/wire): TLS 1.3 only, ALPN "aicli-gw/1",
// server certificate = self-signed ed25519 of the key in <DataDir>/keys/gateway-ed25519.pem (0600), pinned by the
// guest as "sha256:<hex of SubjectPublicKeyInfo>"; the client must present one self-signed ed25519 certificate
// (its fingerprint becomes the conversation's guest identity). Then one hello frame from the guest and one reply
// frame from the supervisor, each a 4-byte big-endian length plus strict JSON (at most 16 KiB), all within
// Options.HandshakeTimeout. After an OK reply the connection carries yamux (keepalive every 15 s): the supervisor
// is the yamux client and opens one stream per HTTP connection; the guest accepts them and serves HTTP. The guest
// may open streams too (egress, tool calls): the gateway accepts them and hands each to Options.GuestStreams with
// the conversation and guest key fingerprint of the connection (GuestStream); StreamRouter dispatches them by their
// egresswire header kind. A guest holding more than Options.MaxGuestStreams streams is disconnected.
//
// Launch tokens are 32 random bytes (base64url). Only their SHA-256 is stored, through the TokenStore seam in
// bucket "gateway-launch", together with the conversation id and expiry. A token is spent (atomically taken from
// the store) by its first presentation, whatever the outcome: a replay, an expired token or a token presented for
// another conversation is refused, logged and counted, and the gateway keeps serving everyone else.
//
// Reconnect design. The guest cannot receive a new launch token after it started (its environment is fixed), so
// the first admission also issues a reconnect secret (32 random bytes) that travels to the guest inside the
// authenticated TLS channel and is kept in the guest's memory only. The supervisor stores, in bucket
// "gateway-reconnect" under the conversation id, the guest's key fingerprint and the secret's SHA-256. When the
// connection drops (guest-side network trouble or a supervisor restart), the guest re-dials the same socket with
// the same ephemeral key and presents the secret instead of a token. The supervisor admits it only when the
// conversation, the TLS-proven key fingerprint and the secret all match the stored record; a failed attempt leaves
// the record intact, so an attacker cannot lock the real guest out. The secret is not rotated, so a reply lost in
// transit cannot strand the guest. After a restart the lead creates a new Gateway on the same DataDir and token
// store (same key, hence the same pinned fingerprint) and calls Prepare for every adopted conversation: that
// re-listens on the existing directory, and the guest's retry loop finds the new socket. A later admission with a
// fresh launch token for the same conversation (a new container) replaces the record, and Release deletes it.
//
// Unspent launch tokens issued by this process are deleted when they are found expired at the next Prepare of
// their conversation, and at Release. Limit: tokens issued by an earlier process and never presented stay in the
// store (about 100 bytes each), because the TokenStore seam has no listing.
package gateway
