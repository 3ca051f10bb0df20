package supinfo

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"aicli.dev/aicli/internal/runtime"
	"aicli.dev/aicli/internal/supinfo/infowire"
)

// maxParallelStats bounds the concurrent stats requests of one sampling.
const maxParallelStats = 8

// stats caches one sampling of every running container for StatsTTL; concurrent requests wait for one refresh.
type stats struct {
	mu   sync.Mutex
	last sampling
	// prev is each container's previous sample, so that CPU use is measured between two samplings.
	prev map[string]runtime.ContainerStats
}

type sampling struct {
	at         time.Time
	containers []infowire.Container
	err        string
}

func (st *stats) get(ctx context.Context, o *Options) sampling {
	st.mu.Lock()
	defer st.mu.Unlock()
	if now := o.Now(); !st.last.at.IsZero() && now.Sub(st.last.at) < o.StatsTTL {
		return st.last
	}
	st.last = st.sample(ctx, o)
	return st.last
}

// sample lists the running containers and samples each, in parallel, within StatsTimeout.
func (st *stats) sample(ctx context.Context, o *Options) sampling {
	s := sampling{at: o.Now()}
	if o.Containers == nil {
		return s
	}
	ctx, cancel := context.WithTimeout(ctx, o.StatsTimeout)
	defer cancel()
	list, err := o.Containers.List(ctx, map[string]string{runtime.LabelSupervisor: o.SupervisorID})
	if err != nil {
		s.err = fmt.Sprintf("listing containers: %v", err)
		return s
	}
	var running []runtime.ContainerState
	for _, c := range list {
		if c.Running {
			running = append(running, c)
		}
	}
	samples := make([]runtime.ContainerStats, len(running))
	errs := make([]error, len(running))
	var wg sync.WaitGroup
	sem := make(chan struct{}, maxParallelStats)
	for i, c := range running {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			samples[i], errs[i] = o.Containers.Stats(ctx, c.ID)
		})
	}
	wg.Wait()
	seen := map[string]runtime.ContainerStats{}
	failed := 0
	for i, c := range running {
		out := infowire.Container{Name: c.Name, Namespace: c.Labels[runtime.LabelNamespace], Agent: c.Labels[runtime.LabelAgent],
			Conversation: c.Labels[runtime.LabelConversation]}
		if err := errs[i]; err != nil {
			out.Error = err.Error()
			failed++
		} else {
			out.CPUPercent, out.MemoryBytes = cpuPercent(samples[i], st.prev[c.ID], c.StartedAt), samples[i].MemoryBytes
			seen[c.ID] = samples[i]
		}
		s.containers = append(s.containers, out)
	}
	st.prev = seen
	if failed > 0 {
		s.err = fmt.Sprintf("%d of %d containers could not be sampled", failed, len(running))
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			s.err += fmt.Sprintf(" within %s", o.StatsTimeout)
		}
	}
	return s
}

// cpuPercent is the CPU use between prev and cur (100 is one core), or since the container started when there is
// no usable previous sample.
func cpuPercent(cur, prev runtime.ContainerStats, started time.Time) float64 {
	from, base := started, uint64(0)
	if !prev.Read.IsZero() && prev.Read.Before(cur.Read) && prev.CPUNanos <= cur.CPUNanos {
		from, base = prev.Read, prev.CPUNanos
	}
	wall := cur.Read.Sub(from)
	if from.IsZero() || wall <= 0 {
		return 0
	}
	return float64(cur.CPUNanos-base) / float64(wall.Nanoseconds()) * 100
}

// disk caches one measurement of the agents' directories and the images for DiskTTL.
type disk struct {
	mu   sync.Mutex
	last infowire.Disk
}

func (d *disk) get(ctx context.Context, o *Options) infowire.Disk {
	d.mu.Lock()
	defer d.mu.Unlock()
	if now := o.Now(); !d.last.MeasuredAt.IsZero() && now.Sub(d.last.MeasuredAt) < o.DiskTTL {
		return d.last
	}
	d.last = measure(ctx, o)
	return d.last
}

func measure(ctx context.Context, o *Options) infowire.Disk {
	out := infowire.Disk{MeasuredAt: o.Now(), Images: []infowire.Image{}}
	ctx, cancel := context.WithTimeout(ctx, o.DiskTimeout)
	defer cancel()
	var errs []error
	if o.AgentsDir != "" {
		n, err := dirSize(ctx, o.AgentsDir)
		out.HomesBytes = n
		if err != nil {
			errs = append(errs, fmt.Errorf("measuring %s: %w", o.AgentsDir, err))
		}
	}
	if o.Images != nil {
		imgs, err := o.Images(ctx)
		if err != nil {
			errs = append(errs, err)
		}
		for _, img := range imgs {
			out.Images = append(out.Images, img)
			out.ImagesBytes += img.SizeBytes
		}
	}
	if err := errors.Join(errs...); err != nil {
		out.Error = err.Error()
	}
	return out
}
