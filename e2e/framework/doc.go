// Package framework is the e2e suite's scaffolding: per-run ids and labels on every container, cleanup and artifact
// dumps per spec, a suite-level orphan reaper for stale test containers, and on-demand static binary builds.
package framework
