// Package secretapi serves supervisor-held secrets write-only over the API:
// PUT sets a value, DELETE removes it, GET lists names, sizes and times.
// No endpoint ever returns a value.
package secretapi
