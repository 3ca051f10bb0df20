// Package ptyhost is the guest's local AiCliPty: it runs one harness CLI under
// a real PTY as an unprivileged user in its own session, feeds a VT emulator
// that renders the screen and answers terminal queries, derives BUSY/IDLE/
// WAITING from the harness's screen cues, delivers messages atomically from one
// FIFO queue, and fans the raw output out to subscribers and the container log.
package ptyhost
