// Package aictl implements the aictl command line: kubectl-like apply, get,
// describe, delete, wait and diff against a supervisor's API.
package aictl
