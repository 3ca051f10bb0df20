package spend

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sort"
	"sync"
	"time"
)

// AgentHome is one agent's durable home directory, where its CLIs keep their session stores.
type AgentHome struct {
	// Namespace owns the agent.
	Namespace string
	// Name is the agent's name.
	Name string
	// Home is the host path of the agent's home (the CLIs see it as their $HOME).
	Home string
}

// Scope is a set of session roots of one harness, attributed to one agent ("" namespace and name for a local run).
type Scope struct {
	Namespace string
	Agent     string
	Harness   Harness
	Roots     []string
	// Home, when set, confines the scope to that directory, whose content its writer controls (an agent's home):
	// Roots must lie inside it, no symbolic link is followed out of it, only regular files are read, and one call
	// reads at most Options.ScanBudget bytes of the scope's files (later calls read on). HomeScopes sets it.
	Home string
}

func (s Scope) agentKey() string {
	if s.Namespace == "" && s.Agent == "" {
		return ""
	}
	return s.Namespace + "/" + s.Agent
}

// Options configure a Service.
type Options struct {
	// IndexPath is the durable index file; empty keeps the index in memory only.
	IndexPath string
	// Parsers are the harness parsers, one per harness.
	Parsers []SessionParser
	// Pricing prices models; nil leaves every model unpriced.
	Pricing ModelPricingSource
	// Workers bounds parallel file reads; 0 means GOMAXPROCS.
	Workers int
	// ScanBudget bounds the bytes one call reads from the files of one home-confined scope (see Scope.Home);
	// 0 means DefaultScanBudget. A file left unread is read on by the next calls (Report.PendingFiles counts
	// them). It is at least MaxLineBytes+1, so a file always makes progress.
	ScanBudget int64
}

// Service computes spend history over session roots, keeping an incremental index between calls.
type Service struct {
	opts    Options
	parsers map[Harness]SessionParser

	mu  sync.Mutex
	idx *index
	// indexNote records why a stored index was discarded.
	indexNote string
}

// NewService builds a Service; the index is loaded lazily on the first call.
func NewService(opts Options) (*Service, error) {
	s := &Service{opts: opts, parsers: map[Harness]SessionParser{}}
	for _, p := range opts.Parsers {
		if _, dup := s.parsers[p.Harness()]; dup {
			return nil, fmt.Errorf("spend: two parsers for harness %q", p.Harness())
		}
		s.parsers[p.Harness()] = p
	}
	if s.opts.Workers <= 0 {
		s.opts.Workers = runtime.GOMAXPROCS(0)
	}
	if s.opts.ScanBudget == 0 {
		s.opts.ScanBudget = DefaultScanBudget
	}
	s.opts.ScanBudget = max(s.opts.ScanBudget, MaxLineBytes+1)
	return s, nil
}

// HomeScopes returns one Scope per agent home and parser, rooted where that harness keeps sessions in a home.
func (s *Service) HomeScopes(homes []AgentHome) []Scope {
	harnesses := make([]Harness, 0, len(s.parsers))
	for h := range s.parsers {
		harnesses = append(harnesses, h)
	}
	sort.Slice(harnesses, func(i, j int) bool { return harnesses[i] < harnesses[j] })
	var out []Scope
	for _, a := range homes {
		for _, h := range harnesses {
			out = append(out, Scope{Namespace: a.Namespace, Agent: a.Name, Harness: h, Roots: s.parsers[h].HomeRoots(a.Home),
				Home: a.Home})
		}
	}
	return out
}

type discovered struct {
	src   SourceFile
	scope Scope
	files *access
	stat  fileStat
	err   error
}

// History brings the index up to date for the scopes and reports spend from since (YYYY-MM-DD, UTC; "" for all).
func (s *Service) History(ctx context.Context, since string, scopes []Scope) (*Report, error) {
	sinceDay := int32(-1 << 30)
	if since != "" {
		t, err := time.Parse(time.DateOnly, since)
		if err != nil {
			return nil, fmt.Errorf("spend: since must be YYYY-MM-DD: %w", err)
		}
		sinceDay = dayOf(t.UnixMilli())
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.loadLocked(); err != nil {
		return nil, err
	}
	if err := s.updateLocked(ctx, scopes); err != nil {
		return nil, err
	}
	return s.reportLocked(ctx, sinceDay, scopes)
}

func (s *Service) loadLocked() error {
	if s.idx != nil {
		return nil
	}
	if s.opts.IndexPath == "" {
		s.idx = newIndex()
		return nil
	}
	idx, err := loadIndex(s.opts.IndexPath)
	if errors.Is(err, errBadIndex) {
		s.indexNote = "stored index was unreadable and has been rebuilt"
		idx, err = newIndex(), nil
	}
	if err != nil {
		return err
	}
	s.idx = idx
	return nil
}

// discover lists the files of all scopes, keeping one copy per SourceFile.Key and harness. It opens the homes of
// confined scopes in homes (to be closed by the caller).
func (s *Service) discover(scopes []Scope, homes map[string]*access) (map[string]*discovered, error) {
	best := map[string]*discovered{}
	for _, sc := range scopes {
		p, ok := s.parsers[sc.Harness]
		if !ok {
			return nil, fmt.Errorf("spend: no parser for harness %q", sc.Harness)
		}
		acc := homes[sc.Home]
		if acc == nil {
			acc = openAccess(sc.Home)
			homes[sc.Home] = acc
		}
		files, err := p.Discover(sc.Roots, acc.readDir)
		if err != nil {
			return nil, fmt.Errorf("spend: discover %s files: %w", sc.Harness, err)
		}
		for _, f := range files {
			d := &discovered{src: f, scope: sc, files: acc, err: f.Err}
			if f.Err == nil {
				d.stat, d.err = acc.stat(f.Path)
			}
			k := string(sc.Harness) + "\x00" + f.Key
			if cur, ok := best[k]; ok {
				if cur.src.Rank > f.Rank || (cur.src.Rank == f.Rank && cur.stat.Size >= d.stat.Size) {
					continue
				}
			}
			best[k] = d
		}
	}
	out := make(map[string]*discovered, len(best))
	for _, d := range best {
		out[d.src.Path] = d
	}
	return out, nil
}

func (s *Service) updateLocked(ctx context.Context, scopes []Scope) error {
	homes := map[string]*access{}
	defer func() {
		for _, a := range homes {
			a.close()
		}
	}()
	found, err := s.discover(scopes, homes)
	if err != nil {
		return err
	}
	x := s.idx
	requested := map[string]bool{}
	for _, sc := range scopes {
		requested[string(sc.Harness)+"\x00"+sc.agentKey()] = true
	}
	changed := false
	resetHarness := map[Harness]bool{}
	// Files that vanished, or are no longer the chosen copy.
	for path, f := range x.files {
		if _, ok := found[path]; ok || !requested[string(f.Harness)+"\x00"+f.Agent] {
			continue
		}
		changed = true
		x.dropFile(f)
		if s.dedups(f.Harness) {
			resetHarness[f.Harness] = true // the vanished file may have hidden copies elsewhere
		}
	}
	var jobs []*scanJob
	for path, d := range found {
		f := x.files[path]
		if f == nil || f.Agent != d.scope.agentKey() || f.Harness != d.scope.Harness {
			if f != nil {
				x.resetFile(f)
			}
			f = &fileEntry{Path: path, Harness: d.scope.Harness, Agent: d.scope.agentKey(), Size: -1}
			x.files[path] = f
			x.touch(path)
			changed = true
		}
		f.pending = false
		if d.err != nil {
			if f.ReadError != d.err.Error() {
				f.ReadError = d.err.Error()
				x.touch(path)
				changed = true
			}
			continue
		}
		if f.Size == d.stat.Size && f.MtimeNs == d.stat.MtimeNs && f.Ino == d.stat.Ino && f.ReadError == "" {
			continue
		}
		changed = true
		if f.Offset > 0 && (d.stat.Size < f.Offset || d.stat.Ino != f.Ino || !tailMatches(d.files, f)) {
			if s.dedups(f.Harness) {
				resetHarness[f.Harness] = true
			} else {
				x.resetFile(f)
			}
		}
		jobs = append(jobs, newJob(f, s.parsers[f.Harness], d))
	}
	for h := range resetHarness {
		x.resetHarness(h)
		for path, d := range found {
			f := x.files[path]
			if f.Harness == h && d.err == nil && !hasJob(jobs, f) {
				jobs = append(jobs, newJob(f, s.parsers[h], d))
			}
		}
	}
	for _, j := range jobs {
		j.offset, j.skip, j.state = j.entry.Offset, j.entry.Skip, j.entry.State
	}
	if err := s.runJobs(ctx, s.budgeted(jobs)); err != nil {
		return err
	}
	if (changed || x.dirty()) && s.opts.IndexPath != "" {
		if err := x.save(s.opts.IndexPath); err != nil {
			return err
		}
	}
	return nil
}

func newJob(f *fileEntry, p SessionParser, d *discovered) *scanJob {
	j := &scanJob{entry: f, parser: p, files: d.files, stat: d.stat, limit: -1}
	if d.scope.Home != "" {
		j.budget = string(d.scope.Harness) + "\x00" + d.scope.agentKey() + "\x00" + d.scope.Home
	}
	return j
}

// budgeted returns the jobs to run now: all of an unconfined scope's, and of a confined scope's as many as
// Options.ScanBudget covers, smallest first, the last one limited to what is left of the budget. The jobs left out
// and the limited one are pending: their files are read on by the next call.
func (s *Service) budgeted(jobs []*scanJob) []*scanJob {
	sort.SliceStable(jobs, func(i, j int) bool {
		a, b := jobs[i], jobs[j]
		if a.budget != b.budget {
			return a.budget < b.budget
		}
		if a.remaining() != b.remaining() {
			return a.remaining() < b.remaining()
		}
		return a.entry.Path < b.entry.Path
	})
	run := jobs[:0]
	left, scope := int64(0), "\x00none"
	for _, j := range jobs {
		if j.budget != scope {
			scope, left = j.budget, s.opts.ScanBudget
		}
		switch {
		case j.budget == "" || j.remaining() <= left:
			left -= j.remaining()
		case left > MaxLineBytes: // enough for a line: read what the budget allows, so the file makes progress
			j.limit, left = left, 0
		default:
			j.entry.pending = true
			continue
		}
		run = append(run, j)
	}
	return run
}

func hasJob(jobs []*scanJob, f *fileEntry) bool {
	for _, j := range jobs {
		if j.entry == f {
			return true
		}
	}
	return false
}

// dedups reports whether a harness's events are deduplicated across files (so a shrinking file forces a rebuild).
func (s *Service) dedups(h Harness) bool {
	d, ok := s.parsers[h].(CrossFileDeduplicator)
	return ok && d.DedupsAcrossFiles()
}

func tailMatches(files *access, f *fileEntry) bool {
	fh, _, err := files.openRegular(f.Path)
	if err != nil {
		return false
	}
	defer func() { _ = fh.Close() }()
	h, err := tailHash(fh, f.Offset)
	return err == nil && h == f.TailHash
}

// runJobs reads the jobs' files in parallel and applies their events in completion order.
func (s *Service) runJobs(ctx context.Context, jobs []*scanJob) error {
	if len(jobs) == 0 {
		return nil
	}
	sort.Slice(jobs, func(i, j int) bool { return jobs[i].stat.Size-jobs[i].offset > jobs[j].stat.Size-jobs[j].offset })
	work := make(chan *scanJob)
	results := make(chan scanResult, s.opts.Workers)
	var wg sync.WaitGroup
	for range min(s.opts.Workers, len(jobs)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			buf := make([]byte, initialBuf)
			for j := range work {
				var r scanResult
				r, buf = j.scan(buf, func(evs []Event) { results <- scanResult{job: j, partial: true, events: evs} })
				results <- r
			}
		}()
	}
	go func() {
		defer close(work)
		for _, j := range jobs {
			select {
			case work <- j:
			case <-ctx.Done():
				return
			}
		}
	}()
	go func() { wg.Wait(); close(results) }()
	for r := range results {
		f := r.job.entry
		s.idx.touch(f.Path)
		for _, ev := range r.events {
			s.idx.apply(f, ev)
		}
		if r.partial {
			continue
		}
		f.Size, f.MtimeNs, f.Ino = r.job.stat.Size, r.job.stat.MtimeNs, r.job.stat.Ino
		f.Offset, f.Skip, f.TailHash, f.State = r.offset, r.skip, r.tail, r.state
		if r.more {
			f.Size, f.pending = -1, true // read on next time
		}
		f.Lines += r.lines
		f.Unparseable += r.unparseable
		if r.quota != nil {
			f.Quota = r.quota
		}
		f.ReadError = ""
		if r.err != nil {
			f.ReadError = r.err.Error()
			f.Size = -1 // retry next time
		}
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("spend: scan interrupted: %w", err)
	}
	return nil
}
