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
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/fstest"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/docker/docker/api/types/build"
	"github.com/docker/docker/api/types/image"
	"github.com/docker/docker/client"
	dockerspec "github.com/moby/docker-image-spec/specs-go/v1"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"aicli.dev/aicli/images"
)

const testDockerfile = `# comment with COPY notacopy /x
FROM scratch
ADD rootfs.tar /
COPY --chown=0:0 passwd /etc/
COPY ["guest", "cli", "/"]
COPY --from=builder /x /y
RUN echo \
  COPY alsonot /here
ENTRYPOINT ["/guest"]
`

func testDefs() fstest.MapFS {
	return fstest.MapFS{
		"h/Dockerfile":  {Data: []byte(testDockerfile)},
		"h/passwd":      {Data: []byte("root:x:0:0::/:/guest\n")},
		"h/rootfs.dirs": {Data: []byte("# c\nhome 0755 0 0\nhome/agent 0700 1000 1000  # trailing\ntmp 1777 0 0\n")},
		"other/README":  {Data: []byte("no Dockerfile here")},
	}
}

func artifacts(t *testing.T, names ...string) string {
	t.Helper()
	dir := t.TempDir()
	for _, n := range names {
		if err := os.WriteFile(filepath.Join(dir, n), []byte("binary "+n), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func untar(t *testing.T, r io.Reader) map[string]*tar.Header {
	t.Helper()
	out := map[string]*tar.Header{}
	tr := tar.NewReader(r)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		out[h.Name] = h
	}
}

func TestCopySources(t *testing.T) {
	got, err := copySources([]byte(testDockerfile))
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"rootfs.tar", "passwd", "guest", "cli"}
	if !slices.Equal(got, want) {
		t.Fatalf("copySources = %q, want %q", got, want)
	}
	for _, bad := range []string{"COPY onlyone", `COPY ["a", `} {
		if _, err := copySources([]byte(bad)); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
	got, _ = copySources([]byte("copy \\\n  a \\\n  b /dst/\n"))
	if !slices.Equal(got, []string{"a", "b"}) {
		t.Fatalf("continuation: %q", got)
	}
}

func TestBaseImages(t *testing.T) {
	df := "FROM scratch\nFROM --platform=linux/amd64 debian-local:bookworm AS base\nFROM base\n" +
		"from node-local:22 as build\nCOPY --from=build /x /y\nFROM debian-local:bookworm\n"
	got, err := baseImages([]byte(df))
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"debian-local:bookworm", "node-local:22"}; !slices.Equal(got, want) {
		t.Fatalf("baseImages = %q, want %q", got, want)
	}
	if _, err := baseImages([]byte("FROM\n")); err == nil {
		t.Fatal("FROM without an image accepted")
	}
}

func TestAssembleContextAndHash(t *testing.T) {
	dir := artifacts(t, "guest", "cli")
	bc, err := assemble(testDefs(), "h", dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := bc.writeTar(&buf); err != nil {
		t.Fatal(err)
	}
	raw := buf.Bytes()
	hdrs := untar(t, bytes.NewReader(raw))
	var names []string
	for n := range hdrs {
		names = append(names, n)
	}
	slices.Sort(names)
	if want := []string{"Dockerfile", "cli", "guest", "passwd", "rootfs.tar"}; !slices.Equal(names, want) {
		t.Fatalf("context files %q, want %q", names, want)
	}
	if hdrs["guest"].Mode != 0o755 || hdrs["passwd"].Mode != 0o644 {
		t.Fatalf("modes: guest %o passwd %o", hdrs["guest"].Mode, hdrs["passwd"].Mode)
	}
	// The generated rootfs.tar holds the declared directories with their owners and modes.
	var rootfs []byte
	for _, f := range bc.files {
		if f.name == "rootfs.tar" {
			rootfs = f.data
		}
	}
	dirs := untar(t, bytes.NewReader(rootfs))
	if len(dirs) != 3 {
		t.Fatalf("rootfs dirs: %v", dirs)
	}
	if h := dirs["home/agent/"]; h == nil || h.Uid != 1000 || h.Gid != 1000 || h.Mode != 0o700 || h.Typeflag != tar.TypeDir {
		t.Fatalf("home/agent header %+v", h)
	}
	if h := dirs["tmp/"]; h == nil || h.Mode != 0o1777 {
		t.Fatalf("tmp header %+v", h)
	}

	// Same inputs → same hash and byte-identical context.
	bc2, _ := assemble(testDefs(), "h", dir, nil)
	var buf2 bytes.Buffer
	_ = bc2.writeTar(&buf2)
	if bc2.hash != bc.hash || !bytes.Equal(buf2.Bytes(), raw) {
		t.Fatal("context not reproducible")
	}
	// An artifact change changes the hash.
	if err := os.WriteFile(filepath.Join(dir, "cli"), []byte("binary cli v2"), 0o755); err != nil {
		t.Fatal(err)
	}
	bc3, _ := assemble(testDefs(), "h", dir, nil)
	if bc3.hash == bc.hash {
		t.Fatal("artifact change did not change the hash")
	}
	// A definition change changes the hash.
	defs := testDefs()
	defs["h/passwd"] = &fstest.MapFile{Data: []byte("root:x:0:0::/:/other\n")}
	bc4, _ := assemble(defs, "h", dir, nil)
	if bc4.hash == bc3.hash {
		t.Fatal("definition change did not change the hash")
	}
	// Unrelated files in the artifact dir do not matter.
	_ = os.WriteFile(filepath.Join(dir, "unrelated"), []byte("x"), 0o644)
	if bc5, _ := assemble(defs, "h", dir, nil); bc5.hash != bc4.hash {
		t.Fatal("unrelated artifact changed the hash")
	}
}

func TestAssembleErrors(t *testing.T) {
	dir := artifacts(t, "guest") // "cli" missing
	_, err := assemble(testDefs(), "h", dir, nil)
	var miss *MissingArtifactError
	if !errors.As(err, &miss) || miss.Name != "cli" {
		t.Fatalf("want MissingArtifactError for cli, got %v", err)
	}
	if want := "cli not found in " + dir + ": run make build"; err.Error() != want {
		t.Fatalf("message %q, want %q", err.Error(), want)
	}
	defs := testDefs()
	defs["h/rootfs.dirs"] = &fstest.MapFile{Data: []byte("home 0755 0\n")}
	if _, err := assemble(defs, "h", artifacts(t, "guest", "cli"), nil); err == nil || !strings.Contains(err.Error(), "line 1") {
		t.Fatalf("bad dirs line: %v", err)
	}
	defs = testDefs()
	defs["h/Dockerfile"] = &fstest.MapFile{Data: []byte("FROM scratch\nCOPY sub/x /\n")}
	if _, err := assemble(defs, "h", dir, nil); err == nil || !strings.Contains(err.Error(), "not a plain artifact") {
		t.Fatalf("path source: %v", err)
	}
}

func TestShippedDefinitions(t *testing.T) {
	b := &Builder{Defs: images.FS, ArtifactDir: artifacts(t, "aicli-guest", "aicli-fake-cli")}
	hs, err := b.Harnesses()
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(hs, "fake") {
		t.Fatalf("harnesses %v lack fake", hs)
	}
	bc, err := b.context("fake")
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, f := range bc.files {
		names = append(names, f.name)
	}
	for _, want := range []string{"Dockerfile", "aicli-guest", "aicli-fake-cli", "rootfs.tar", "passwd", "group"} {
		if !slices.Contains(names, want) {
			t.Errorf("fake context lacks %s (has %q)", want, names)
		}
	}
	if _, err := b.context("nope"); err == nil || !strings.Contains(err.Error(), "known: ") || !strings.Contains(err.Error(), "fake") {
		t.Fatalf("unknown harness: %v", err)
	}
	if _, err := b.context("../etc"); err == nil {
		t.Fatal("path-like harness accepted")
	}
}

// fakeEngine is an in-memory ImageAPI: builds "succeed" after release is closed, recording each.
type fakeEngine struct {
	mu       sync.Mutex
	images   map[string]map[string]string // tag → labels
	builds   atomic.Int32
	release  chan struct{}
	failWith string
	contexts [][]byte

	imports    atomic.Int32
	imported   [][]byte
	importFail string
}

// ImageImport records the tarball and tags it with the LABEL changes; importFail makes the stream carry an error.
func (e *fakeEngine) ImageImport(_ context.Context, src image.ImportSource, ref string, o image.ImportOptions) (io.ReadCloser, error) {
	e.imports.Add(1)
	data, err := io.ReadAll(src.Source)
	if err != nil {
		return nil, err
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.importFail != "" {
		return io.NopCloser(strings.NewReader(fmt.Sprintf(`{"errorDetail":{"message":%q}}`+"\n", e.importFail))), nil
	}
	e.imported = append(e.imported, data)
	labels := map[string]string{}
	for _, c := range o.Changes {
		if kv, ok := strings.CutPrefix(c, "LABEL "); ok {
			k, v, _ := strings.Cut(kv, "=")
			labels[k] = v
		}
	}
	e.images[ref] = labels
	return io.NopCloser(strings.NewReader(`{"status":"sha256:abc"}` + "\n")), nil
}

func newFakeEngine() *fakeEngine {
	e := &fakeEngine{images: map[string]map[string]string{}, release: make(chan struct{})}
	close(e.release)
	return e
}

func (e *fakeEngine) ImageBuild(ctx context.Context, r io.Reader, o build.ImageBuildOptions) (build.ImageBuildResponse, error) {
	e.builds.Add(1)
	data, err := io.ReadAll(r)
	if err != nil {
		return build.ImageBuildResponse{}, err
	}
	if o.Version != build.BuilderV1 || o.PullParent || len(o.Tags) != 1 {
		return build.ImageBuildResponse{}, fmt.Errorf("unexpected options %+v", o)
	}
	select {
	case <-e.release:
	case <-ctx.Done():
		return build.ImageBuildResponse{}, ctx.Err()
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	e.contexts = append(e.contexts, data)
	body := `{"stream":"Step 1/2 : FROM scratch\n"}` + "\n" + `{"stream":" ---> done\n"}` + "\n"
	if e.failWith != "" {
		body += fmt.Sprintf(`{"errorDetail":{"message":%q},"error":%q}`, e.failWith, e.failWith) + "\n"
	} else {
		e.images[o.Tags[0]] = o.Labels
	}
	return build.ImageBuildResponse{Body: io.NopCloser(strings.NewReader(body))}, nil
}

func (e *fakeEngine) ImageInspect(_ context.Context, ref string, _ ...client.ImageInspectOption) (image.InspectResponse, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if _, ok := e.images[ref]; !ok {
		return image.InspectResponse{}, cerrdefs.ErrNotFound.WithMessage("no such image: " + ref)
	}
	return image.InspectResponse{ID: "sha256:" + ref, Config: &dockerspec.DockerOCIImageConfig{
		ImageConfig: ocispec.ImageConfig{Labels: e.images[ref]}}}, nil
}

func (e *fakeEngine) ImageList(context.Context, image.ListOptions) ([]image.Summary, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	var out []image.Summary
	for tag, l := range e.images {
		out = append(out, image.Summary{RepoTags: []string{tag}, Labels: l})
	}
	return out, nil
}

func (e *fakeEngine) ImageRemove(_ context.Context, ref string, _ image.RemoveOptions) ([]image.DeleteResponse, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	delete(e.images, ref)
	return []image.DeleteResponse{{Untagged: ref}}, nil
}

func TestEnsureBuildsOnceThenHits(t *testing.T) {
	eng := newFakeEngine()
	dir := artifacts(t, "guest", "cli")
	b := &Builder{Docker: eng, Defs: testDefs(), ArtifactDir: dir, Logger: slog.New(slog.DiscardHandler)}
	var lines []string
	ref, err := b.Ensure(t.Context(), "h", func(l string) { lines = append(lines, l) })
	if err != nil {
		t.Fatal(err)
	}
	want, _ := b.Ref("h")
	if ref != want || !strings.HasPrefix(ref, "aicli-guest-h:") || len(ref) != len("aicli-guest-h:")+12 {
		t.Fatalf("ref %q, Ref() %q", ref, want)
	}
	if !slices.Equal(lines, []string{"Step 1/2 : FROM scratch", "---> done"}) {
		t.Fatalf("progress %q", lines)
	}
	labels := eng.images[ref]
	if labels[LabelHarness] != "h" || labels[LabelManagedBy] != ManagedBy || !strings.HasPrefix(labels[LabelHash], ref[len(ref)-12:]) {
		t.Fatalf("labels %v", labels)
	}
	// The context sent to the engine is the assembled one.
	hdrs := untar(t, bytes.NewReader(eng.contexts[0]))
	if hdrs["guest"] == nil || hdrs["rootfs.tar"] == nil {
		t.Fatalf("engine got context %v", hdrs)
	}
	if _, err := b.Ensure(t.Context(), "h", nil); err != nil || eng.builds.Load() != 1 {
		t.Fatalf("second Ensure: err %v builds %d", err, eng.builds.Load())
	}
	// Changing an artifact → new tag → one more build; pruning removes the old tag.
	b.PruneOld = true
	_ = os.WriteFile(filepath.Join(dir, "guest"), []byte("v2"), 0o755)
	ref2, err := b.Ensure(t.Context(), "h", nil)
	if err != nil || ref2 == ref || eng.builds.Load() != 2 {
		t.Fatalf("rebuild: ref2 %q err %v builds %d", ref2, err, eng.builds.Load())
	}
	if _, ok := eng.images[ref]; ok {
		t.Fatal("old image not pruned")
	}
	if _, ok := eng.images[ref2]; !ok {
		t.Fatal("new image pruned")
	}
}

func TestEnsureConcurrentCallsShareOneBuild(t *testing.T) {
	eng := newFakeEngine()
	eng.release = make(chan struct{})
	b := &Builder{Docker: eng, Defs: testDefs(), ArtifactDir: artifacts(t, "guest", "cli"), Logger: slog.New(slog.DiscardHandler)}
	const n = 8
	var wg sync.WaitGroup
	refs := make([]string, n)
	errs := make([]error, n)
	var progressed atomic.Int32
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			refs[i], errs[i] = b.Ensure(t.Context(), "h", func(string) { progressed.Add(1) })
		}()
	}
	// Release the build only once every caller has joined it.
	joined := func() int {
		b.mu.Lock()
		defer b.mu.Unlock()
		for _, c := range b.inflight {
			c.lmu.Lock()
			defer c.lmu.Unlock()
			return len(c.listeners)
		}
		return 0
	}
	deadline := time.Now().Add(5 * time.Second)
	for joined() < n {
		if time.Now().After(deadline) {
			t.Fatalf("only %d of %d callers joined the build", joined(), n)
		}
		time.Sleep(time.Millisecond)
	}
	close(eng.release)
	wg.Wait()
	for i := range n {
		if errs[i] != nil || refs[i] != refs[0] {
			t.Fatalf("call %d: %q %v", i, refs[i], errs[i])
		}
	}
	if got := eng.builds.Load(); got != 1 {
		t.Fatalf("builds = %d, want 1", got)
	}
	if got := progressed.Load(); got != 2*n {
		t.Fatalf("every caller should see the 2 progress lines: got %d total", got)
	}
}

func TestEnsureReportsBuildErrorsAndCallerCancel(t *testing.T) {
	eng := newFakeEngine()
	eng.failWith = "COPY failed: boom"
	b := &Builder{Docker: eng, Defs: testDefs(), ArtifactDir: artifacts(t, "guest", "cli"), Logger: slog.New(slog.DiscardHandler)}
	if _, err := b.Ensure(t.Context(), "h", nil); err == nil || !strings.Contains(err.Error(), "COPY failed: boom") {
		t.Fatalf("want build error, got %v", err)
	}
	// Missing artifact fails before touching the engine.
	b.ArtifactDir = artifacts(t, "guest")
	before := eng.builds.Load()
	if _, err := b.Ensure(t.Context(), "h", nil); !errors.As(err, new(*MissingArtifactError)) || eng.builds.Load() != before {
		t.Fatalf("missing artifact: %v", err)
	}
	// A caller that gives up gets its ctx error; the shared build still completes for others.
	eng.failWith = ""
	eng.release = make(chan struct{})
	b.ArtifactDir = artifacts(t, "guest", "cli")
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if _, err := b.Ensure(ctx, "h", nil); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled caller: %v", err)
	}
	close(eng.release)
	if _, err := b.Ensure(t.Context(), "h", nil); err != nil {
		t.Fatal(err)
	}
}

func TestEnsureBuildTimeoutAndDepartedListeners(t *testing.T) {
	eng := newFakeEngine()
	eng.release = make(chan struct{}) // the engine hangs
	b := &Builder{Docker: eng, Defs: testDefs(), ArtifactDir: artifacts(t, "guest", "cli"),
		Logger: slog.New(slog.DiscardHandler), BuildTimeout: 50 * time.Millisecond}
	start := time.Now()
	_, err := b.Ensure(t.Context(), "h", nil)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("want the build timeout, got %v", err)
	}
	if el := time.Since(start); el > 5*time.Second {
		t.Fatalf("timeout took %v", el)
	}

	// A caller that gave up no longer receives progress; one still waiting does.
	eng.release = make(chan struct{})
	b.BuildTimeout = 0
	ctx, cancel := context.WithCancel(t.Context())
	var gone, stayed atomic.Int32
	errc := make(chan error, 1)
	go func() {
		_, err := b.Ensure(ctx, "h", func(string) { gone.Add(1) })
		errc <- err
	}()
	go func() {
		_, err := b.Ensure(t.Context(), "h", func(string) { stayed.Add(1) })
		errc <- err
	}()
	deadline := time.Now().Add(5 * time.Second)
	for {
		b.mu.Lock()
		n := 0
		for _, c := range b.inflight {
			c.lmu.Lock()
			n = len(c.listeners)
			c.lmu.Unlock()
		}
		b.mu.Unlock()
		if n == 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("callers did not join")
		}
		time.Sleep(time.Millisecond)
	}
	cancel()
	if err := <-errc; !errors.Is(err, context.Canceled) {
		t.Fatalf("departed caller: %v", err)
	}
	close(eng.release)
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
	if gone.Load() != 0 || stayed.Load() != 2 {
		t.Fatalf("progress: departed caller got %d lines, waiting caller %d", gone.Load(), stayed.Load())
	}
}

func TestEnsureRefusesMissingBaseImage(t *testing.T) {
	eng := newFakeEngine()
	before := eng.builds.Load()
	// A base image the engine lacks fails before any build: nothing is pulled.
	defs := testDefs()
	defs["h/Dockerfile"] = &fstest.MapFile{Data: []byte("FROM debian-local:bookworm\nCOPY guest cli /\n")}
	bb := &Builder{Docker: eng, Defs: defs, ArtifactDir: artifacts(t, "guest", "cli"), Logger: slog.New(slog.DiscardHandler)}
	var missing *BaseImageMissingError
	if _, err := bb.Ensure(t.Context(), "h", nil); !errors.As(err, &missing) || missing.Image != "debian-local:bookworm" ||
		eng.builds.Load() != before {
		t.Fatalf("missing base: %v (builds %d→%d)", err, before, eng.builds.Load())
	}
	eng.images["debian-local:bookworm"] = nil
	if _, err := bb.Ensure(t.Context(), "h", nil); err != nil {
		t.Fatalf("present base: %v", err)
	}
}

func TestBuildCAFile(t *testing.T) {
	dir := artifacts(t, "guest")
	defs := fstest.MapFS{
		"ca/Dockerfile":    {Data: []byte("FROM scratch\nCOPY " + BuildCAName + " /etc/x.crt\nCOPY guest /\n")},
		"noca/Dockerfile":  {Data: []byte("FROM scratch\nCOPY guest /\n")},
		"other/Dockerfile": {Data: []byte("FROM scratch\nCOPY guest /\n")},
	}
	caFile := filepath.Join(t.TempDir(), "bundle.pem")
	if err := os.WriteFile(caFile, []byte("-----BEGIN CERTIFICATE-----\nx\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	content := func(b *Builder, h string) (string, []byte) {
		t.Helper()
		bc, err := b.context(h)
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range bc.files {
			if f.name == BuildCAName {
				return bc.hash, f.data
			}
		}
		return bc.hash, nil
	}
	b := &Builder{Defs: defs, ArtifactDir: dir, BuildCAFile: caFile}
	h1, data := content(b, "ca")
	if string(data) != "-----BEGIN CERTIFICATE-----\nx\n" {
		t.Fatalf("context CA %q", data)
	}
	b.BuildCAFile = "-"
	h2, data := content(b, "ca")
	if data == nil || len(data) != 0 || h2 == h1 {
		t.Fatalf("\"-\": data %q, hash changed %v", data, h2 != h1)
	}
	// A definition that does not copy it is unaffected by it.
	hn1, data := content(b, "noca")
	b.BuildCAFile = caFile
	hn2, _ := content(b, "noca")
	if data != nil || hn1 != hn2 {
		t.Fatalf("noca: data %q, hash changed %v", data, hn1 != hn2)
	}
	b.BuildCAFile = filepath.Join(t.TempDir(), "absent.pem")
	if _, err := b.context("ca"); err == nil || !strings.Contains(err.Error(), "build CA bundle") {
		t.Fatalf("absent bundle: %v", err)
	}
	// Read only when a definition names it.
	if _, err := b.context("noca"); err != nil {
		t.Fatalf("noca with an absent bundle: %v", err)
	}
	// The default is the host's bundle when it exists.
	b.BuildCAFile = ""
	_, data = content(b, "ca")
	want, err := os.ReadFile(DefaultBuildCAFile)
	if errors.Is(err, fs.ErrNotExist) {
		want = []byte{}
	}
	if !bytes.Equal(data, want) {
		t.Fatalf("default CA: %d bytes, host bundle %d", len(data), len(want))
	}
}
