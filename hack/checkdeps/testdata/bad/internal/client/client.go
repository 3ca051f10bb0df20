// Package client imports the API server for a constant, and the transcript
// for a wire type.
package client

import (
	"example.com/bad/internal/apiserver"
	"example.com/bad/internal/transcript"
)

// Use uses both.
func Use() { _ = apiserver.Prefix; transcript.Use() }
