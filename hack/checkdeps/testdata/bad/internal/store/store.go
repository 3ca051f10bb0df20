// Package store is the server's store, on pebble.
package store

import "github.com/cockroachdb/pebble/v2"

// Use uses pebble.
func Use() { pebble.Use() }
