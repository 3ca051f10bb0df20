// Package capability mints and verifies the supervisor's capability tokens:
// macaroons (gopkg.in/macaroon.v2) under one rotating root key per namespace,
// bound to a conversation, a guest key and a tool, that a holder can only
// narrow (docs/decisions/0020-capabilities-leases-and-mounted-tools.md).
package capability
