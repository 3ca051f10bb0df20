// Package spendcli is the `aictl spend` command: spend history from the supervisor, or computed locally over
// session directories with --local.
package spendcli
