// Package toolcalls is the read model of tool calls: it turns a Grant's
// history (each status write with a new status.lastCall is one call) into a
// list of calls, and holds the reply shape of the conversations' toolcalls
// subresource. It imports no server code, so clients (aictl) share it.
package toolcalls
