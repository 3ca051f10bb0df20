// Package prometheus stands in for the metrics library.
package prometheus

// Use does nothing.
func Use() {}
