// Package textsearch holds what the full-text indexes (recall buckets,
// transcript history) share about their query text: parsing bleve's
// query-string syntax with an error that names the failing byte offset, and
// cutting a marked snippet around the first query word.
package textsearch
