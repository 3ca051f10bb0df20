// Package toolwire is the framed protocol of a mounted tool call (docs/decisions/0020): aicli-tool talks it to the
// guest's tool relay, and the relay forwards it verbatim over a side-channel stream to the supervisor's tool
// server. A frame is a 1-byte type, a 4-byte big-endian payload length and the payload. The caller sends one
// Request, then Stdin frames and one StdinEOF; the server sends Stdout and Stderr frames as the backend writes and
// ends with one Exit. It imports only the standard library so the guest and aicli-tool stay small.
package toolwire
