// Package ptyhost is the guest's local AiCliPty: it runs one harness CLI under
// a real PTY as an unprivileged user in its own session, feeds a VT emulator
// (guest/vtscreen, working off a byte-bounded backlog so it never slows the
// reader under normal loads) that renders the screen and answers terminal
// queries, derives BUSY/IDLE/WAITING from the harness's screen cues, delivers
// messages atomically from one FIFO queue, and fans the raw output out to
// subscribers (a live but slow one paces the CLI, a stuck one is cut off) and
// the container log.
package ptyhost
