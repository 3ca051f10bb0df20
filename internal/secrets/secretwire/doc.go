// Package secretwire holds the shapes of the write-only secrets endpoints,
// shared by the server (secretapi) and its clients (aictl, aicli-supervisor)
// without pulling the server into them. No shape here carries a value back.
package secretwire
