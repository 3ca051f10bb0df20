// Package apiserver is the server.
package apiserver

import "example.com/bad/internal/store"

// Prefix is what the client wanted.
const Prefix = "/apis"

// Use uses the store.
func Use() { store.Use() }
