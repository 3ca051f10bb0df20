// Package spendapi serves spend history and live quota over HTTP (the supervisor's spendhistory endpoint) and
// assembles a spend.Service from a data directory.
package spendapi
