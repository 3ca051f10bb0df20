// Package transcript mixes a wire type with the store.
package transcript

import "example.com/bad/internal/store"

// Use uses the store.
func Use() { store.Use() }
