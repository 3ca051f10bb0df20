// Package history is the transcript history index: a full-text read model
// of every committed transcript entry, searched by humans (aictl history
// search) and by the transcript-search built-in tool. It is never used to
// seed a conversation's context.
//
// # Source of truth
//
// The transcript side table (internal/transcript, bucket "transcript", key
// "<conversation uid>/<cursor>") is the truth; the index under the directory
// passed to Open (<data>/history) is derived and can be deleted at any time.
//
// # Index
//
// One bleve v2 index (<dir>/index-vN) holds one document per entry, ID
// "<uid>/<cursor as 16 hex digits>" (the entry's side-table key), with the
// fields text (English analyzer, positions for phrases), agent
// ("<namespace>/<agent>", stored), conv ("<namespace>/<agent>/<conversation>",
// stored), speaker (exact) and time. The entry's text is not stored in the
// index: a hit's snippet, speaker and time are read from the side table.
//
// # Checkpoints and catch-up
//
// Per conversation uid the index keeps "indexed up to cursor" as a bleve
// internal value written in the same batch as the entries it covers, so the
// documents and their checkpoint are persisted together: after a crash the
// index reopens at a consistent earlier state and catches up from there.
// Re-indexing an entry replaces its document (same ID), so nothing is ever
// duplicated.
//
// Entries reach the index two ways: StoreLog.Committed hands every committed
// batch to Committed, which queues it (bounded, never blocking the
// transcript); a single indexing goroutine applies queued batches. A batch
// that does not continue its conversation's checkpoint (one was dropped from
// a full queue, or commits raced) makes the indexer read the gap from the
// side table. Catch-up — scanning every conversation in the side table from
// its checkpoint — runs at Open (in the background; CatchUp waits for it),
// and again periodically when a batch was dropped or a conversation could not
// be resolved.
//
// The side table is keyed by conversation uid only; a Resolver maps a uid to
// its namespace, agent and conversation name. Entries of a uid the Resolver
// does not know (yet) are left unindexed and retried at the next catch-up.
// When the index directory is missing, unreadable or of another mapping
// version it is recreated empty and the first catch-up rebuilds it.
package history
