package store

import "github.com/cockroachdb/pebble/v2"

// PebbleDB exposes the underlying database to benchmarks.
func (s *Store) PebbleDB() *pebble.DB { return s.db }
