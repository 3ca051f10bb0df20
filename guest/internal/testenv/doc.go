// Package testenv is test support for guest packages: it builds the fake CLI
// binary and makes home/work directories an unprivileged CLI user can use.
package testenv
