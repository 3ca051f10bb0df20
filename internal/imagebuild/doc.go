// Package imagebuild builds per-harness guest images on demand from the shipped definitions (package images) and
// the static binaries beside the supervisor, tagging each by a content hash so an unchanged definition is a cache hit.
package imagebuild
