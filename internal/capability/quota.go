package capability

import (
	"sync"
	"time"
)

const (
	quotaBuckets = 60 // one-minute buckets of a one-hour window
	bucketWidth  = int64(time.Minute / time.Second)
)

// Quota limits calls per key to a number per hour, over a sliding window of
// sixty one-minute buckets. Keys idle for an hour are dropped, so memory
// follows the keys used in the last hour. Safe for concurrent use.
type Quota struct {
	mu        sync.Mutex
	keys      map[string]*window
	lastSweep int64 // minute of the last sweep
}

type window struct {
	minute [quotaBuckets]int64 // the minute each bucket counts
	count  [quotaBuckets]int32
	last   int64 // latest minute with a call
}

// NewQuota returns an empty Quota.
func NewQuota() *Quota {
	return &Quota{keys: map[string]*window{}}
}

// Allow counts a call for key at now and reports whether it stays within
// perHour calls in the hour up to now; a refused call is not counted.
// perHour <= 0 means no cap.
func (q *Quota) Allow(key string, perHour int, now time.Time) bool {
	if perHour <= 0 {
		return true
	}
	minute := now.Unix() / bucketWidth
	q.mu.Lock()
	defer q.mu.Unlock()
	if minute > q.lastSweep {
		q.sweep(minute)
	}
	w := q.keys[key]
	if w == nil {
		w = &window{}
		q.keys[key] = w
	}
	var used int64
	for i := range w.minute {
		if w.count[i] > 0 && w.minute[i] > minute-quotaBuckets {
			used += int64(w.count[i])
		}
	}
	if used >= int64(perHour) {
		return false
	}
	i := int(((minute % quotaBuckets) + quotaBuckets) % quotaBuckets)
	if w.minute[i] != minute {
		w.minute[i], w.count[i] = minute, 0
	}
	w.count[i]++
	w.last = max(w.last, minute)
	return true
}

// Len is the number of keys held.
func (q *Quota) Len() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return len(q.keys)
}

// sweep drops keys without a call in the hour before minute; run at most
// once a minute.
func (q *Quota) sweep(minute int64) {
	q.lastSweep = minute
	for k, w := range q.keys {
		if w.last <= minute-quotaBuckets {
			delete(q.keys, k)
		}
	}
}
