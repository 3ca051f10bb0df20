// Package mailbox is the agents' durable mailbox: an append-only log of mail
// events per namespace in the store's side table, and a per-recipient inbox
// projection with a durable read cursor, rebuilt from the log by replay.
//
// # Delivery semantics
//
//   - Exactly-once append: Append returns only once its message_sent record is
//     synced (an acknowledged message survives kill -9). A message carrying an
//     idempotency key is appended at most once per (namespace, sender, key): a
//     retry returns the first result, marked Replayed.
//   - Ordering: every event of a namespace gets the next sequence number
//     (strictly increasing, with gaps where read-advances were logged) and a
//     non-decreasing timestamp; an inbox lists messages in sequence order, so
//     messages from one sender to one recipient are seen in append order.
//   - At-least-once display with an explicit read-advance: reading an inbox
//     does not mark anything read; a message stays unread (and is shown again)
//     until the recipient acknowledges it with Ack, which moves the cursor
//     forward only, and is itself a synced inbox_read record in the log.
//
// # Layout
//
//	mailbox/<namespace>/<seq %020d>   one event record (JSON): message_sent or inbox_read
//
// The projection (inboxes, cursors, idempotency keys) is kept in memory,
// built at Open by replaying the log and rebuilt per namespace by Rebuild.
package mailbox
