// Package store is the supervisor's durable event store: Kubernetes-shaped
// objects (*unstructured.Unstructured) kept in pebble, with resourceVersion,
// generation, finalizer and watch semantics, per-object history and a small
// synced key/value side table.
//
// # Durability and group commit
//
// Every mutation is handed to one writer goroutine. The writer drains all
// pending mutations, decides each one in order against its own view of the
// current state (so conflicts inside a group are decided in arrival order),
// encodes them into one pebble batch (point writes in key order, so pebble's
// memtable inserts reuse their skiplist search; ADR 0016) and applies it as
// a synced write (DB.ApplyNoSyncWait with pebble.Sync), then immediately
// moves on to the next group while the WAL fsync is in flight; pebble
// coalesces the fsyncs of all groups applied meanwhile. A small goroutine
// per group waits for its fsync; because WAL syncs complete in write order,
// whichever waiter wakes first publishes the whole durable prefix of groups,
// in order: it updates the in-memory index that serves Get/List, fans the
// events out to watchers in sequence order and only then acknowledges the
// callers. A caller is never acknowledged, and no reader or watcher sees a
// change, before it is on disk.
// Side-table reads (GetKV goes through the writer; ScanKV/LastKV wait for the
// groups they may have seen) return only durable values too. A WAL write or
// sync failure is fatal in pebble (it panics through its logger); the store
// does not try to continue after one.
//
// # Key layout
//
//	m/rv                                  last assigned event sequence (uint64 BE)
//	m/compact                             first retained watch-log sequence (uint64 BE)
//	m/version                             key layout version ("3")
//	e/<seq BE8>                           watch log, one entry per writer group, keyed by
//	                                      the group's first event: a 0x00 tag, then each
//	                                      event's h/ key (uvarint length + key) in order
//	                                      (layout 1 and 2: one entry per event whose value
//	                                      is its h/ key; both are read). ADR 0015
//	o/<resource>/<namespace>/<name>       current object: the seq (BE8) of its latest
//	                                      history entry, which holds the object (stores
//	                                      written before this form hold the object JSON
//	                                      itself; both are read). Open reads these and
//	                                      seeks h/ forward once per object
//	h/<resource>/<namespace>/<name>/<seq BE8>  per-object history: the event record
//	                                      (see record.go: an 11-byte binary header with
//	                                      type, time and flags, the previous labels when
//	                                      they changed, then the object JSON; seq and
//	                                      address come from the key)
//	k/<bucket>/<key>                      side-table value (raw bytes)
//
// Layout 1 wrote JSON history records and layout 2 one watch-log entry per
// event; Open reads both and marks the store layout 3, which older builds
// cannot read.
//
// Resource, namespace, name and bucket never contain '/' (checked on entry),
// so the prefixes are unambiguous. The watch log (e/) is trimmed by Compact
// and automatically once it holds more than Options.CompactRetain events;
// history (h/) is never trimmed and outlives the object.
//
// # Sequence numbers
//
// resourceVersion is the event sequence number: a uint64, strictly increasing
// across the whole store, written as a decimal string. Side-table operations
// do not consume sequence numbers.
//
// # Event types
//
// History records carry ADDED, MODIFIED (spec/metadata update), STATUS
// (UpdateStatus), TERMINATING (Delete of an object with finalizers sets
// deletionTimestamp) and DELETED. Watches map STATUS and TERMINATING to
// watch.Modified. With a label selector, a MODIFIED event whose label change
// moves the object into the selection is delivered as ADDED and one moving it
// out as DELETED, as Kubernetes does.
//
// # Watches
//
// A watch from resourceVersion "" or "0" starts with ADDED events for the
// current objects (optionally ended by the initial-events-end bookmark);
// from any other version it replays later events from an in-memory cache of
// recent events (Options.WatchCache) or, further back, from the e/ log, then
// continues live. Every watcher has a bounded queue (Options.WatchBuffer);
// overflowing it ends the watch with a 410 watch.Error event instead of ever
// slowing down writers. Error events carry a *metav1.Status; all other events
// carry a private *unstructured.Unstructured copy.
//
// # Objects
//
// Objects returned by the store are never shared with it: the store keeps
// a created object only as the JSON it committed and decodes it once, on
// first read (Get, List, watch, a later update), with a direct scanner that
// yields the same values as the API machinery's decoder; updated objects
// are kept as the trees the writer built, and readers get deep copies.
// Create takes the caller's object: it completes it in place (status
// dropped, metadata reduced to client-owned fields, then the server's
// fields set) and returns it, as a Kubernetes client fills in the object it
// creates; it encodes it in the caller's goroutine in one walk, so the
// writer only appends the commit-time metadata (creationTimestamp,
// generation, resourceVersion) to the JSON. Objects holding values that are
// not in canonical JSON form (integers other than int64, typed maps...)
// are normalized into a copy first, and the copy is returned.
//
// # Write path cost
//
// Per write the writer does one index lookup, appends the stamps to the
// caller's JSON, and adds two keys to the group's batch (the group adds
// its watch-log entry and m/rv); one Clock
// reading and its formatting serve the whole group. The index is one map
// of slots holding both the writer's view and the published (durable)
// version, so publication is a pointer store per object.
package store
