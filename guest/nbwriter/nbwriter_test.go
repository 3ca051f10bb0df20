package nbwriter

import (
	"bytes"
	"context"
	"sync"
	"testing"
	"time"
)

// blockingWriter blocks every Write until release is closed.
type blockingWriter struct {
	release chan struct{}
	mu      sync.Mutex
	buf     bytes.Buffer
}

func (b *blockingWriter) Write(p []byte) (int, error) {
	<-b.release
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func TestWriterNeverBlocksAndDropsOverLimit(t *testing.T) {
	dst := &blockingWriter{release: make(chan struct{})}
	w := New(dst, 1024)
	chunk := bytes.Repeat([]byte("x"), 100)
	done := make(chan struct{})
	go func() {
		for i := 0; i < 1000; i++ {
			_, _ = w.Write(chunk)
		}
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("Write blocked on a stalled destination")
	}
	if w.Dropped() == 0 {
		t.Fatalf("expected drops with a stalled destination, got none")
	}
	if q := w.Queued(); q > 1024 {
		t.Fatalf("queued %d bytes, limit 1024", q)
	}
	close(dst.release)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := w.Close(ctx); err != nil {
		t.Fatal(err)
	}
	got := int64(dst.buf.Len())
	if got+w.Dropped() != 100*1000 {
		t.Fatalf("written %d + dropped %d != 100000", got, w.Dropped())
	}
}

func TestWriterPassesEverythingWhenDestinationKeepsUp(t *testing.T) {
	var dst bytes.Buffer
	w := New(&dst, 1<<20)
	for i := 0; i < 100; i++ {
		_, _ = w.Write([]byte("line\n"))
	}
	if err := w.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if dst.Len() != 500 || w.Dropped() != 0 {
		t.Fatalf("got %d bytes, dropped %d", dst.Len(), w.Dropped())
	}
	if _, err := w.Write([]byte("x")); err == nil {
		t.Fatal("write after close succeeded")
	}
}
