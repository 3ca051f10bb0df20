// Package vtscreen is a small, fast VT/xterm screen emulator for the guest: it
// tracks the text and cursor of the visible screen (main and alternate), scrolls
// by rotating line slices, measures wide characters, answers the terminal
// queries CLIs send (cursor position, device status and attributes, mode
// requests) and renders the screen as plain text lines. Colours and other
// attributes are parsed and ignored.
package vtscreen
