// Package transcript is a conversation's attributed transcript: clean text
// events with a speaker and a per-conversation cursor, committed to the store
// as they arrive. Its entry and speaker types live in transcriptwire.
package transcript
