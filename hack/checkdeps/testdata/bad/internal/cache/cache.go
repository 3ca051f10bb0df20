// Package cache uses pebble directly.
package cache

import "github.com/cockroachdb/pebble/v2"

// Use uses pebble.
func Use() { pebble.Use() }
