// Package images holds the guest image definitions shipped inside the supervisor: one directory per harness, each
// with a Dockerfile and the small files it needs. internal/imagebuild builds them on demand; adding a harness is
// adding a directory.
package images

import "embed"

// FS holds every definition directory: <harness>/Dockerfile plus every other file under <harness>/.
//
//go:embed */*
var FS embed.FS
