module github.com/cockroachdb/pebble/v2

go 1.26
