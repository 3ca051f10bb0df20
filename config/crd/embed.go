// Package crd ships the generated CustomResourceDefinitions of aicli.dev so the
// supervisor validates and defaults with the same schemas users read.
package crd

import "embed"

// FS holds the generated CRD manifests (bases/*.yaml).
//
//go:embed bases/*.yaml
var FS embed.FS
