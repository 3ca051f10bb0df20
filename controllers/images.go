package controllers

import (
	"context"
	"log/slog"
	"sync"
	"time"
)

// ImageEnsurer builds (or finds) the guest image of a harness; see internal/imagebuild.
type ImageEnsurer interface {
	Ensure(ctx context.Context, harness string, progress func(string)) (string, error)
}

// imageRetryAfter is how long a failed build is remembered before retrying.
const imageRetryAfter = 30 * time.Second

// ImageCache runs guest image builds off the reconcile path: Get answers at
// once, starting a build in the background when needed, and calls Changed
// when a build finishes so that waiting objects are reconciled again.
type ImageCache struct {
	Ensurer ImageEnsurer
	// Changed is called (without locks held) after a build finishes.
	Changed func(harness string)
	Logger  *slog.Logger
	// Ctx bounds background builds.
	Ctx context.Context

	mu      sync.Mutex
	entries map[string]*imageEntry
}

type imageEntry struct {
	ref      string
	err      error
	failedAt time.Time
	building bool
	progress string
}

// ImageState is what Get reports about a harness's image.
type ImageState struct {
	// Ref is the image reference once built.
	Ref string
	// Building is true while a build runs; Progress is its last line.
	Building bool
	Progress string
	// Err is the last build error (retried after imageRetryAfter).
	Err error
}

// Get returns the image state for harness, starting a build when there is no
// image, no build running, and no recent failure.
func (c *ImageCache) Get(harness string) ImageState {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.entries == nil {
		c.entries = map[string]*imageEntry{}
	}
	e := c.entries[harness]
	if e == nil {
		e = &imageEntry{}
		c.entries[harness] = e
	}
	if e.ref == "" && !e.building && (e.err == nil || time.Since(e.failedAt) > imageRetryAfter) {
		e.building, e.err, e.progress = true, nil, "starting build"
		go c.build(harness, e)
	}
	return ImageState{Ref: e.ref, Building: e.building, Progress: e.progress, Err: e.err}
}

func (c *ImageCache) build(harness string, e *imageEntry) {
	ctx := c.Ctx
	if ctx == nil {
		ctx = context.Background()
	}
	ref, err := c.Ensurer.Ensure(ctx, harness, func(line string) {
		c.mu.Lock()
		e.progress = line
		c.mu.Unlock()
	})
	c.mu.Lock()
	e.building = false
	if err != nil {
		e.err, e.failedAt = err, time.Now()
		if c.Logger != nil {
			c.Logger.Error("guest image build failed", "harness", harness, "err", err)
		}
	} else {
		e.ref = ref
	}
	c.mu.Unlock()
	if c.Changed != nil {
		c.Changed(harness)
	}
}
