// Package v1 is an API package that imports more than apimachinery.
package v1

import (
	"fmt"

	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/scheme"
)

// SchemeBuilder is built with controller-runtime's builder.
var SchemeBuilder = scheme.Builder{}

// Describe uses the allowed imports.
func Describe() string { return fmt.Sprint(runtime.Object(nil)) }
