// Package wire is the supervisor–guest side-channel protocol shared by both ends: the TLS identity rules
// (self-signed ed25519 certificates pinned by SubjectPublicKeyInfo fingerprint), the length-prefixed hello
// frames exchanged right after the TLS handshake, and the yamux configuration and transport (MuxConn, which
// sends each yamux frame in one socket write) that multiplex the connection afterwards. It imports only the
// standard library and yamux so the guest stays small.
package wire
