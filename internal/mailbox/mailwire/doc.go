// Package mailwire holds the shapes of the mailbox endpoints, shared by the
// server (mailapi) and its clients (aictl) without pulling the server into them.
package mailwire
