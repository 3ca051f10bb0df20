// Package toolcallapi serves GET …/conversations/{name}/toolcalls: the
// conversation's tool calls, read from the history of the Grants whose
// subject is the conversation's agent.
package toolcallapi
