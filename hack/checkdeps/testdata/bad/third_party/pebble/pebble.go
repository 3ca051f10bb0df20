// Package pebble stands in for the storage engine.
package pebble

// Use does nothing.
func Use() {}
