package imagebuild

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/fstest"
	"time"

	"github.com/docker/docker/api/types/build"
	"github.com/docker/docker/api/types/image"
	"github.com/docker/docker/client"

	"aicli.dev/aicli/images"
)

const testBaseDef = `# a base
tag      local-base:1
suite    trixie
include  ca-certificates, curl
include  curl   # duplicates collapse
strip    usr/share/doc/*
strip    /var/lib/apt/lists/*
`

func baseDefs() fstest.MapFS {
	return fstest.MapFS{
		"based/Dockerfile":     {Data: []byte("FROM local-base:1 AS build\nRUN true\nFROM local-base:1\nCOPY guest /\n")},
		"base/local.base":      {Data: []byte(testBaseDef)},
		"base/README":          {Data: []byte("not a definition")},
		"other/Dockerfile":     {Data: []byte("FROM scratch\nCOPY guest /\n")},
		"userbased/Dockerfile": {Data: []byte("FROM user-base:2\nCOPY guest /\n")},
	}
}

func TestParseBaseDef(t *testing.T) {
	d, err := ParseBaseDef("x.base", []byte(testBaseDef))
	if err != nil {
		t.Fatal(err)
	}
	if d.Tag != "local-base:1" || d.Suite != "trixie" || d.Variant != "minbase" || d.File != "x.base" ||
		!slices.Equal(d.Include, []string{"ca-certificates", "curl"}) ||
		!slices.Equal(d.Strip, []string{"usr/share/doc/*", "var/lib/apt/lists/*"}) || len(d.Hash) != 64 {
		t.Fatalf("parsed %+v", d)
	}
	d2, _ := ParseBaseDef("x.base", []byte(testBaseDef+"\n"))
	if d2.Hash == d.Hash {
		t.Fatal("hash does not cover the file")
	}
	for _, bad := range []string{
		"suite trixie\n",                          // no tag
		"tag a:1\n",                               // no suite
		"tag a:1\nsuite trixie\nfrobnicate 1\n",   // unknown key
		"tag A B\nsuite trixie\n",                 // bad ref
		"tag a:1\nsuite tri xie\n",                // two words
		"tag a:1\nsuite trixie\ninclude $(x)\n",   // bad package
		"tag a:1\nsuite trixie\nstrip ../etc\n",   // escapes
		"tag a:1\nsuite trixie\nstrip /\n",        // the root itself
		"tag a:1\nsuite trixie\nstrip usr/[\n",    // bad pattern
		"tag a:1\nsuite trixie\nstrip a b\n",      // two paths
		"tag a:1\nsuite trixie\nvariant --evil\n", // flag injection
		"tag a:1\nsuite --keyring=/x\n",           // flag injection
		"tag a:1\nsuite trixie\ninclude a,-x\n",   // flag-like package
		"tag a:1\nsuite trixie\ninclude a;rm\n",   // shell-like package
		"tag a:1\nsuite trixie\nstrip usr/*\\\n",  // trailing escape
	} {
		if _, err := ParseBaseDef("bad.base", []byte(bad)); err == nil {
			t.Errorf("accepted %q", bad)
		}
	}
}

func TestShippedBaseDefinition(t *testing.T) {
	b := &Builder{Defs: images.FS}
	defs, err := b.BaseDefs()
	if err != nil {
		t.Fatal(err)
	}
	d := defs["aicli-base-debian:trixie"]
	if d == nil {
		t.Fatalf("no definition for aicli-base-debian:trixie: %v", defs)
	}
	if d.Suite != "trixie" || d.Variant != "minbase" || !slices.Contains(d.Include, "ca-certificates") {
		t.Fatalf("definition %+v", d)
	}
	// Every base a shipped Dockerfile names is either scratch or made from a shipped definition: no shipped image
	// needs a registry.
	hs, err := b.Harnesses()
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"claude", "codex", "gemini", "opencode", "fake"} {
		if !slices.Contains(hs, want) {
			t.Errorf("harnesses %v lack %s", hs, want)
		}
	}
	if slices.Contains(hs, BaseDir) {
		t.Errorf("%s listed as a harness", BaseDir)
	}
	for _, h := range hs {
		df, err := fs.ReadFile(images.FS, h+"/Dockerfile")
		if err != nil {
			t.Fatal(err)
		}
		bases, err := baseImages(df)
		if err != nil {
			t.Fatal(err)
		}
		for _, img := range bases {
			if defs[img] == nil {
				t.Errorf("%s: base %s has no definition under %s/", h, img, BaseDir)
			}
		}
	}
}

func TestBaseDefsErrors(t *testing.T) {
	defs := baseDefs()
	defs["base/dup.base"] = &fstest.MapFile{Data: []byte("tag local-base:1\nsuite bookworm\n")}
	if _, err := (&Builder{Defs: defs}).BaseDefs(); err == nil || !strings.Contains(err.Error(), "both define") {
		t.Fatalf("duplicate: %v", err)
	}
	defs = baseDefs()
	defs["base/bad.base"] = &fstest.MapFile{Data: []byte("tag x:1\n")}
	if _, err := (&Builder{Defs: defs}).BaseDefs(); err == nil || !strings.Contains(err.Error(), "base/bad.base") {
		t.Fatalf("bad: %v", err)
	}
	if m, err := (&Builder{Defs: testDefs()}).BaseDefs(); err != nil || len(m) != 0 {
		t.Fatalf("no base dir: %v %v", m, err)
	}
}

func TestBaseDefinitionIsPartOfTheContentHash(t *testing.T) {
	dir := artifacts(t, "guest")
	defs := baseDefs()
	b := &Builder{Defs: defs, ArtifactDir: dir}
	based, _ := b.Ref("based")
	other, _ := b.Ref("other")
	defs["base/local.base"] = &fstest.MapFile{Data: []byte(testBaseDef + "include less\n")}
	based2, err := b.Ref("based")
	if err != nil {
		t.Fatal(err)
	}
	other2, _ := b.Ref("other")
	if based2 == based {
		t.Fatal("a changed base definition kept the tag of an image built on it")
	}
	if other2 != other {
		t.Fatal("a changed base definition changed an image that does not use it")
	}
}

// fakeRootfs is a RootfsMaker producing a one-file tar, counting calls; it blocks until release is closed.
type fakeRootfs struct {
	calls   atomic.Int32
	release chan struct{}
	fail    error
	closed  atomic.Int32
}

func (f *fakeRootfs) MakeRootfs(ctx context.Context, def BaseDef, progress func(string)) (io.ReadCloser, error) {
	f.calls.Add(1)
	if f.release != nil {
		select {
		case <-f.release:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	progress("I: Retrieving " + def.Suite)
	if f.fail != nil {
		return nil, f.fail
	}
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	_ = tw.WriteHeader(&tar.Header{Name: "etc/os-release", Mode: 0o644, Size: 2, Typeflag: tar.TypeReg})
	_, _ = tw.Write([]byte("x\n"))
	_ = tw.Close()
	return &closeCounter{Reader: &buf, n: &f.closed}, nil
}

type closeCounter struct {
	io.Reader
	n *atomic.Int32
}

func (c *closeCounter) Close() error { c.n.Add(1); return nil }

func TestEnsureMakesMissingBaseOnceThenBuilds(t *testing.T) {
	eng := newFakeEngine()
	rf := &fakeRootfs{release: make(chan struct{})}
	defs := baseDefs()
	defs["based2/Dockerfile"] = &fstest.MapFile{Data: []byte("FROM local-base:1\nCOPY guest /g2\n")}
	b := &Builder{Docker: eng, Defs: defs, ArtifactDir: artifacts(t, "guest"), Rootfs: rf,
		Logger: slog.New(slog.DiscardHandler)}
	const n = 4
	var wg sync.WaitGroup
	errs := make([]error, n)
	lines := make([][]string, n)
	var mu sync.Mutex
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			// Half ask for the image, half for one built on the same base: all share one making.
			h := "based"
			if i%2 == 1 {
				h = "based2"
			}
			_, errs[i] = b.Ensure(t.Context(), h, func(l string) {
				mu.Lock()
				lines[i] = append(lines[i], l)
				mu.Unlock()
			})
		}()
	}
	waitListeners(t, b, baseKey("local-base:1"), n)
	close(rf.release)
	wg.Wait()
	for i := range n {
		if errs[i] != nil {
			t.Fatalf("caller %d: %v", i, errs[i])
		}
		if !slices.Contains(lines[i], "I: Retrieving trixie") || !slices.ContainsFunc(lines[i], func(l string) bool {
			return strings.HasPrefix(l, "base local-base:1: importing")
		}) {
			t.Fatalf("caller %d progress lacks the base lines: %q", i, lines[i])
		}
	}
	if rf.calls.Load() != 1 || eng.imports.Load() != 1 {
		t.Fatalf("rootfs made %d times, imported %d times; want 1", rf.calls.Load(), eng.imports.Load())
	}
	if rf.closed.Load() == 0 {
		t.Fatal("root filesystem stream never closed")
	}
	lbl := eng.images["local-base:1"]
	bdefs, _ := b.BaseDefs()
	if lbl[LabelBaseHash] != bdefs["local-base:1"].Hash || lbl[LabelManagedBy] != ManagedBy {
		t.Fatalf("base labels %v", lbl)
	}
	if !bytes.Contains(eng.imported[0], []byte("etc/os-release")) {
		t.Fatal("import did not receive the root filesystem")
	}
	// Present now: no second making.
	if _, err := b.Ensure(t.Context(), "based", nil); err != nil || rf.calls.Load() != 1 {
		t.Fatalf("again: %v, calls %d", err, rf.calls.Load())
	}
}

func TestEnsureBase(t *testing.T) {
	eng := newFakeEngine()
	rf := &fakeRootfs{}
	b := &Builder{Docker: eng, Defs: baseDefs(), Rootfs: rf, Logger: slog.New(slog.DiscardHandler)}
	if err := b.EnsureBase(t.Context(), "user-base:2", nil); err == nil || !strings.Contains(err.Error(), "no base definition") {
		t.Fatalf("undefined tag: %v", err)
	}
	var lines []string
	if err := b.EnsureBase(t.Context(), "local-base:1", func(l string) { lines = append(lines, l) }); err != nil {
		t.Fatal(err)
	}
	if rf.calls.Load() != 1 || eng.images["local-base:1"] == nil || !slices.Contains(lines, "I: Retrieving trixie") {
		t.Fatalf("calls %d, images %v, lines %q", rf.calls.Load(), eng.images, lines)
	}
	if err := b.EnsureBase(t.Context(), "local-base:1", nil); err != nil || rf.calls.Load() != 1 {
		t.Fatalf("second: %v, calls %d", err, rf.calls.Load())
	}
	rf.fail = errors.New("no mirror")
	delete(eng.images, "local-base:1")
	err := b.EnsureBase(t.Context(), "local-base:1", nil)
	var missing *BaseImageMissingError
	if !errors.As(err, &missing) || err.Error() != "imagebuild: base image local-base:1 could not be made: "+
		"make root filesystem for local-base:1: no mirror" {
		t.Fatalf("failure: %v", err)
	}
}

func TestEnsureRemakesOnlyOutdatedManagedBases(t *testing.T) {
	eng := newFakeEngine()
	rf := &fakeRootfs{}
	b := &Builder{Docker: eng, Defs: baseDefs(), ArtifactDir: artifacts(t, "guest"), Rootfs: rf,
		Logger: slog.New(slog.DiscardHandler)}
	// A user's own image under the tag (no labels) is used as it is.
	eng.images["local-base:1"] = map[string]string{"vendor": "user"}
	if _, err := b.Ensure(t.Context(), "based", nil); err != nil || rf.calls.Load() != 0 {
		t.Fatalf("user base: %v, calls %d", err, rf.calls.Load())
	}
	// One this package made from an older definition is remade.
	eng.images["local-base:1"] = map[string]string{LabelManagedBy: ManagedBy, LabelBaseHash: "old"}
	b.Defs.(fstest.MapFS)["based/Dockerfile"] = &fstest.MapFile{Data: []byte("FROM local-base:1\nCOPY guest /new\n")}
	if _, err := b.Ensure(t.Context(), "based", nil); err != nil || rf.calls.Load() != 1 {
		t.Fatalf("outdated base: %v, calls %d", err, rf.calls.Load())
	}
	defs, _ := b.BaseDefs()
	if eng.images["local-base:1"][LabelBaseHash] != defs["local-base:1"].Hash {
		t.Fatalf("not remade: %v", eng.images["local-base:1"])
	}
}

func TestEnsureBaseFailures(t *testing.T) {
	eng := newFakeEngine()
	rf := &fakeRootfs{fail: errors.New("debootstrap not found")}
	b := &Builder{Docker: eng, Defs: baseDefs(), ArtifactDir: artifacts(t, "guest"), Rootfs: rf,
		Logger: slog.New(slog.DiscardHandler)}
	_, err := b.Ensure(t.Context(), "based", nil)
	var missing *BaseImageMissingError
	if !errors.As(err, &missing) || missing.Image != "local-base:1" || !strings.Contains(err.Error(), "debootstrap not found") ||
		eng.builds.Load() != 0 {
		t.Fatalf("failed making: %v (builds %d)", err, eng.builds.Load())
	}
	// A base with no definition is still refused without making anything.
	rf.fail = nil
	if _, err := b.Ensure(t.Context(), "userbased", nil); !errors.As(err, &missing) || missing.Err != nil ||
		missing.Image != "user-base:2" || rf.calls.Load() != 1 {
		t.Fatalf("undefined base: %v", err)
	}
	// An engine client that cannot import: refused, nothing made.
	nb := &Builder{Docker: noImport{eng}, Defs: baseDefs(), ArtifactDir: b.ArtifactDir, Rootfs: rf,
		Logger: slog.New(slog.DiscardHandler)}
	if _, err := nb.Ensure(t.Context(), "based", nil); !errors.As(err, &missing) || rf.calls.Load() != 1 {
		t.Fatalf("no importer: %v", err)
	}
	// An import the engine rejects.
	eng.importFail = "invalid tar header"
	if _, err := b.Ensure(t.Context(), "based", nil); !errors.As(err, &missing) || !strings.Contains(err.Error(), "invalid tar header") {
		t.Fatalf("import failure: %v", err)
	}
	// A caller that gives up while the base is being made gets its own ctx error, not a base failure.
	eng.importFail = ""
	rf.release = make(chan struct{})
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Millisecond)
	defer cancel()
	if _, err := b.Ensure(ctx, "based", nil); !errors.Is(err, context.DeadlineExceeded) || errors.As(err, &missing) {
		t.Fatalf("departed caller: %v", err)
	}
	close(rf.release)
	if _, err := b.Ensure(t.Context(), "based", nil); err != nil {
		t.Fatal(err)
	}
}

// noImport hides the fake engine's ImageImport.
type noImport struct{ e *fakeEngine }

func (n noImport) ImageBuild(ctx context.Context, r io.Reader, o build.ImageBuildOptions) (build.ImageBuildResponse, error) {
	return n.e.ImageBuild(ctx, r, o)
}
func (n noImport) ImageInspect(ctx context.Context, ref string, o ...client.ImageInspectOption) (image.InspectResponse, error) {
	return n.e.ImageInspect(ctx, ref, o...)
}
func (n noImport) ImageList(ctx context.Context, o image.ListOptions) ([]image.Summary, error) {
	return n.e.ImageList(ctx, o)
}
func (n noImport) ImageRemove(ctx context.Context, ref string, o image.RemoveOptions) ([]image.DeleteResponse, error) {
	return n.e.ImageRemove(ctx, ref, o)
}

// waitListeners waits until n callers listen on the in-flight call key.
func waitListeners(t *testing.T, b *Builder, key string, n int) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		b.mu.Lock()
		got := 0
		if c := b.inflight[key]; c != nil {
			c.lmu.Lock()
			got = len(c.listeners)
			c.lmu.Unlock()
		}
		b.mu.Unlock()
		if got >= n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d callers joined %s", got, n, key)
		}
		time.Sleep(time.Millisecond)
	}
}

func TestStripTree(t *testing.T) {
	root := t.TempDir()
	for _, f := range []string{"usr/share/doc/a/x", "usr/share/doc/b", "usr/share/keep", "var/lib/apt/lists/l1"} {
		p := filepath.Join(root, f)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	n, err := stripTree(root, []string{"usr/share/doc/*", "var/lib/apt/lists/*", "nothing/*"})
	if err != nil || n != 3 {
		t.Fatalf("stripped %d: %v", n, err)
	}
	for f, want := range map[string]bool{"usr/share/doc": true, "usr/share/doc/a": false, "usr/share/keep": true,
		"var/lib/apt/lists": true, "var/lib/apt/lists/l1": false} {
		if _, err := os.Lstat(filepath.Join(root, f)); (err == nil) != want {
			t.Errorf("%s exists=%v, want %v", f, err == nil, want)
		}
	}
}

func TestUnescapeMount(t *testing.T) {
	for in, want := range map[string]string{`/a\040b`: "/a b", `/plain`: "/plain", `/tail\04`: `/tail\04`, `/x\09y`: `/x\09y`} {
		if got := unescapeMount(in); got != want {
			t.Errorf("unescapeMount(%q) = %q, want %q", in, got, want)
		}
	}
	dir := t.TempDir()
	if m, err := mountsUnder(dir); err != nil || len(m) != 0 {
		t.Fatalf("mountsUnder(%s) = %v, %v", dir, m, err)
	}
	if m, err := mountsUnder("/"); err != nil || !slices.Contains(m, "/") {
		t.Fatalf("mountsUnder(/) = %v, %v", m, err)
	}
}

// TestDebootstrapWithStandInCommand runs the real Debootstrap maker against a stand-in debootstrap script: the
// arguments, progress, strip, tar stream and cleanup are the real ones.
func TestDebootstrapWithStandInCommand(t *testing.T) {
	if os.Geteuid() != 0 {
		// Not root: the maker must refuse up front (debootstrap needs root; the supervisor runs as root).
		_, err := (&Debootstrap{}).MakeRootfs(t.Context(), BaseDef{Tag: "x:1", Suite: "trixie"}, func(string) {})
		if err == nil || !strings.Contains(err.Error(), "needs root") {
			t.Fatalf("non-root: %v", err)
		}
		return
	}
	bin := t.TempDir()
	argsFile := filepath.Join(bin, "args")
	script := fmt.Sprintf(`#!/bin/sh
echo "$@" > %s
for a; do case "$a" in /*) root="$a";; esac; done
echo "I: Retrieving InRelease"
mkdir -p "$root/etc" "$root/usr/share/doc/pkg" "$root/bin"
echo trixie > "$root/etc/debian_version"
echo doc > "$root/usr/share/doc/pkg/copyright"
ln -s ../etc/debian_version "$root/bin/link"
echo "I: Base system installed successfully."
`, argsFile)
	cmd := filepath.Join(bin, "fake-debootstrap")
	if err := os.WriteFile(cmd, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	tmp := t.TempDir()
	d := &Debootstrap{Command: cmd, TempDir: tmp, Mirror: "http://127.0.0.1:1/debian"}
	def := BaseDef{Tag: "x:1", Suite: "trixie", Variant: "minbase", Include: []string{"ca-certificates", "curl"},
		Strip: []string{"usr/share/doc/*"}}
	var progress []string
	rc, err := d.MakeRootfs(t.Context(), def, func(l string) { progress = append(progress, l) })
	if err != nil {
		t.Fatal(err)
	}
	hdrs := map[string]*tar.Header{}
	tr := tar.NewReader(rc)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		hdrs[strings.TrimPrefix(h.Name, "./")] = h
	}
	if err := rc.Close(); err != nil {
		t.Fatal(err)
	}
	if err := rc.Close(); err != nil {
		t.Fatal("second Close:", err)
	}
	if hdrs["etc/debian_version"] == nil || hdrs["bin/link"] == nil || hdrs["bin/link"].Typeflag != tar.TypeSymlink {
		t.Fatalf("tar entries %v", hdrs)
	}
	if hdrs["usr/share/doc/pkg/copyright"] != nil || hdrs["usr/share/doc/pkg/"] != nil {
		t.Fatal("strip paths are in the tar")
	}
	args, _ := os.ReadFile(argsFile)
	if got := strings.Fields(string(args)); len(got) != 5 || got[0] != "--variant=minbase" ||
		got[1] != "--include=ca-certificates,curl" || got[2] != "trixie" || got[4] != d.Mirror {
		t.Fatalf("debootstrap args %q", got)
	}
	if !slices.Contains(progress, "I: Retrieving InRelease") || !slices.ContainsFunc(progress, func(l string) bool {
		return strings.HasPrefix(l, "stripped 1 paths")
	}) {
		t.Fatalf("progress %q", progress)
	}
	if left, _ := os.ReadDir(tmp); len(left) != 0 {
		t.Fatalf("temporary tree left behind: %v", left)
	}

	// A failing debootstrap quotes its last output and leaves nothing behind.
	if err := os.WriteFile(cmd, []byte("#!/bin/sh\necho 'E: Failed getting release file'\nexit 1\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := d.MakeRootfs(t.Context(), def, func(string) {}); err == nil || !strings.Contains(err.Error(), "E: Failed getting release file") {
		t.Fatalf("failure: %v", err)
	}
	if left, _ := os.ReadDir(tmp); len(left) != 0 {
		t.Fatalf("temporary tree left behind after failure: %v", left)
	}
	// A missing command says how to get it.
	d.Command = filepath.Join(bin, "absent")
	if _, err := d.MakeRootfs(t.Context(), def, func(string) {}); err == nil || !strings.Contains(err.Error(), "hack/ensure-docker.sh") {
		t.Fatalf("missing command: %v", err)
	}
}

// TestDebootstrapCancelKillsTheProcessGroup: ending ctx ends debootstrap's process group (it forks dpkg, chroot, …)
// promptly.
func TestDebootstrapCancelKillsTheProcessGroup(t *testing.T) {
	bin := t.TempDir()
	cmd := filepath.Join(bin, "slow-debootstrap")
	pidFile := filepath.Join(bin, "child.pid")
	script := fmt.Sprintf("#!/bin/sh\nsleep 60 &\necho $! > %s\necho started\nwait\n", pidFile)
	if err := os.WriteFile(cmd, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	started := make(chan struct{})
	var once sync.Once
	errc := make(chan error, 1)
	go func() {
		// runLines is how MakeRootfs runs debootstrap.
		errc <- runLines(ctx, exec.Command(cmd), func(l string) {
			if l == "started" {
				once.Do(func() { close(started) })
			}
		})
	}()
	select {
	case <-started:
	case <-time.After(10 * time.Second):
		t.Fatal("stand-in never started")
	}
	cancel()
	select {
	case err := <-errc:
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("want context.Canceled, got %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("MakeRootfs did not return after cancel")
	}
	data, err := os.ReadFile(pidFile)
	if err != nil {
		t.Fatal(err)
	}
	var pid int
	fmt.Sscan(string(data), &pid)
	deadline := time.Now().Add(5 * time.Second)
	for processAlive(pid) {
		if time.Now().After(deadline) {
			t.Fatalf("child %d survived the cancel", pid)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func processAlive(pid int) bool {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	// A zombie (state Z) has exited.
	f := strings.Fields(string(data))
	return len(f) > 2 && f[2] != "Z"
}
