// Package ptyclient is the supervisor's remote AiCliPty: a ptyapi.PTY that
// forwards every call over HTTP to a guest's server (guest/server), typically
// through an *http.Client whose connections are side-channel streams.
package ptyclient
