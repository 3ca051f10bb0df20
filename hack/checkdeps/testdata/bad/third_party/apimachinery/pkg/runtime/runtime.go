// Package runtime stands in for apimachinery's runtime.
package runtime

// Object stands in for runtime.Object.
type Object interface{}
