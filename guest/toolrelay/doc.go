// Package toolrelay is the guest end of mounted tools (docs/decisions/0020): it listens on a unix socket the CLI
// user can reach, holds the conversation's capability tokens in memory, and turns every aicli-tool connection into
// a side-channel stream to the supervisor's tool server: it reads the caller's Request, puts the tool's token in
// and then pipes the guest/toolwire frames both ways verbatim. It decides nothing but "is this tool held at all".
package toolrelay
