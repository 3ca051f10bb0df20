// Package compare runs the reference tool ccusage and the spend library on the same session trees and diffs their
// per-day, per-model token totals.
package compare
