// Package scheme stands in for controller-runtime's scheme builder.
package scheme

// Builder stands in for scheme.Builder.
type Builder struct{}
