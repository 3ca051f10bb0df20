// Package recall keeps each agent's recall buckets: documents an agent
// remembers and later finds again by full-text search.
//
// # Durability
//
// The documents live in the store's synced side table (bucket "recall", key
// "<namespace>/<agent>/<bucket>/<id>", value the document's JSON); that table
// is the source of truth. Put returns once the document is synced there.
//
// # Index
//
// Search runs on a bleve v2 index kept under the directory passed to Open,
// one index per recall bucket (<dir>/<namespace>/<agent>/<bucket>/index-vN).
// One index per bucket rather than one per agent with a bucket field because
// BM25 ranking statistics (document frequency, average field length) are then
// those of the bucket being searched, not of the agent's other buckets;
// deleting or rebuilding a bucket touches only its own directory; and a
// search never needs a bucket filter clause. Indexes are opened lazily on a
// bucket's first use and stay open until Close.
//
// Fields title, tags and body are analysed like bleve's English analyzer
// (possessives, lower case, stop words, Porter stemming), so "running" finds
// "runs"; its word tokenizer has an ASCII fast path giving the same tokens
// as the Unicode (UAX #29) one. There is no _all field: a query term without
// a field searches title, tags and body. Scoring is BM25 (bleve v2.6
// mapping ScoringModel "bm25"), not bleve's TF-IDF default.
//
// The index is derived data. While a bucket index is open a marker file
// "dirty" sits next to it; Close flushes the index to disk and removes it.
// If at opening the index is missing, cannot be opened, was built with
// another mapping version, or the marker shows an unclean shutdown (the
// index may lack acknowledged writes), it is deleted and rebuilt from the
// side table. That is what lets index batches return before bleve persists
// them (scorch "unsafe_batch"), and a Put index its documents while their
// store writes wait for the fsync; a failed write drops the bucket's index
// for a rebuild.
//
// # Queries
//
// Search takes bleve's query-string syntax: bare terms (any field), "quoted
// phrases", +required and -excluded terms, field:term (title, tags, body).
// A malformed query is refused with a *QueryError naming the byte offset of
// the first term that cannot be parsed.
package recall
