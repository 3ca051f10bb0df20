// Package aictltest runs aictl command lines in tests: in the foreground or
// in the background, with their output captured safely for polling.
package aictltest
