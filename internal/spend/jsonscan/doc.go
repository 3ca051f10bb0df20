// Package jsonscan walks just enough of a JSON line to pull out a few fields, skipping large string values with
// fast byte searches instead of decoding them; it is the hot path of the spend parsers.
package jsonscan
