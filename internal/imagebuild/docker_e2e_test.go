//go:build e2e

package imagebuild

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/rand"
	"fmt"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"github.com/docker/docker/api/types/build"
	"github.com/docker/docker/api/types/filters"
	"github.com/docker/docker/api/types/image"
	"github.com/docker/docker/client"
)

// TestDockerBuildLeavesNoDanglingImages builds multi-stage definitions with the Builder on the real engine (legacy
// builder, nothing pulled: the base is made here FROM scratch) and checks that the images the build made outside
// its last stage are gone afterwards, while the images it took from the cache of an unrelated build (one of them
// dangling) stay, and so do the tagged base and result; and that a failed build leaves nothing it made.
// Run: go test -tags e2e -run TestDocker ./internal/imagebuild (Docker must be running: hack/ensure-docker.sh).
func TestDockerBuildLeavesNoDanglingImages(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cli, err := client.NewClientWithOpts(client.FromEnv, client.WithAPIVersionNegotiation())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cli.Close() })
	if _, err := cli.Ping(ctx); err != nil {
		t.Fatalf("Docker is required for this test (run hack/ensure-docker.sh): %v", err)
	}
	run := fmt.Sprintf("ib-e2e-%d", time.Now().UnixNano())
	const runLabel = "aicli.dev/test-run"
	t.Cleanup(func() { removeRun(t, cli, runLabel+"="+run) })
	uniq := func(name string) string { return name + " " + run + " " + rand.Text() + "\n" }
	stage := func(name string) []string { return []string{runLabel + "=" + run, "aicli.dev/test-stage=" + name} }

	// A local base (FROM scratch: nothing can be pulled), tagged.
	base := "aicli-imagebuild-e2e-base:" + run
	rawBuild(ctx, t, cli, base, map[string]string{
		"Dockerfile": "FROM scratch\nLABEL " + runLabel + "=" + run + "\nCOPY base /base\n",
		"base":       uniq("base"),
	})

	// An unrelated build whose first stage leaves a dangling image. The Builder's definition repeats that stage
	// (its steps come from the cache, its result is that dangling image) and starts another stage alike.
	shared := "FROM " + base + " AS shared\nLABEL " + runLabel + "=" + run + " aicli.dev/test-stage=shared\nCOPY a /a\n"
	a, u := uniq("a"), uniq("u")
	rawBuild(ctx, t, cli, "aicli-imagebuild-e2e-other:"+run, map[string]string{
		"Dockerfile": shared + "COPY u /u\nFROM " + base + "\nCOPY --from=shared /u /u\n",
		"a":          a,
		"u":          u,
	})
	unrelated := list(ctx, t, cli, false, append(stage("shared"), "dangling=true")...)
	if len(unrelated) != 1 {
		t.Fatalf("the unrelated build left %d dangling images, want 1", len(unrelated))
	}

	dir := t.TempDir()
	for name, data := range map[string]string{"a": a, "u": u, "b": uniq("b"), "s": uniq("s"), "c": uniq("c")} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	defs := fstest.MapFS{
		"ibe2e/Dockerfile": {Data: []byte(shared + "COPY b /b\n" +
			strings.Replace(shared, " AS shared", " AS same", 1) + "COPY u /u\n" +
			"FROM " + base + " AS solo\nLABEL " + runLabel + "=" + run + " aicli.dev/test-stage=solo\nCOPY s /s\n" +
			"FROM " + base + "\nCOPY --from=shared /b /b\nCOPY --from=same /u /u\nCOPY --from=solo /s /s\nCOPY c /c\n")},
		"ibfail/Dockerfile": {Data: []byte("FROM " + base + " AS st\nLABEL " + runLabel + "=" + run + " aicli.dev/test-stage=fail\nCOPY s /s\n" +
			"FROM " + base + "\nLABEL " + runLabel + "=" + run + " aicli.dev/test-stage=fail last=1\nCOPY --from=st /nothing-here /x\n")},
	}
	b := &Builder{Docker: cli, Defs: defs, ArtifactDir: dir, BuildCAFile: "-",
		Logger: slog.New(slog.NewTextHandler(testWriter{t}, nil))}
	cached := 0
	ref, err := b.Ensure(ctx, "ibe2e", func(l string) {
		if l == usingCache {
			cached++
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	if cached < 5 {
		t.Fatalf("the build took %d steps from the cache, want the 5 it shares with the unrelated build", cached)
	}

	// The result and the base keep their tags.
	for _, tag := range []string{ref, base} {
		if _, err := cli.ImageInspect(ctx, tag); err != nil {
			t.Fatalf("%s: %v", tag, err)
		}
	}
	// Nothing the build made outside its last stage is left: all of stage solo, and stage shared's COPY b.
	if left := list(ctx, t, cli, true, stage("solo")...); len(left) > 0 {
		t.Fatalf("stage solo left images %q", left)
	}
	chain := map[string]bool{}
	for id := unrelated[0]; id != ""; {
		chain[id] = true
		ins, err := cli.ImageInspect(ctx, id)
		if err != nil {
			t.Fatalf("the unrelated dangling image or a parent of it is gone: %v", err)
		}
		id = ins.Parent
	}
	for _, id := range list(ctx, t, cli, true, stage("shared")...) {
		if !chain[id] {
			t.Fatalf("stage shared left %s, which is not the unrelated image %s or a parent of it", id, unrelated[0])
		}
	}
	// The unrelated dangling image stays although the build used it as a stage's result: the build did not make it.
	if dangling := list(ctx, t, cli, false, runLabel+"="+run, "dangling=true"); !slices.Equal(dangling, unrelated) {
		t.Fatalf("dangling images of this run %q, want only the unrelated one %q", dangling, unrelated)
	}

	// A failed build leaves nothing it made either (its first stage's images, the last stage's LABEL).
	if _, err := b.Ensure(ctx, "ibfail", nil); err == nil || !strings.Contains(err.Error(), "nothing-here") {
		t.Fatalf("want the build to fail on the missing file, got %v", err)
	}
	if left := list(ctx, t, cli, true, stage("fail")...); len(left) > 0 {
		t.Fatalf("the failed build left images %q", left)
	}
}

// rawBuild builds files with the legacy builder straight through the engine (not the Builder) and tags the result.
func rawBuild(ctx context.Context, t *testing.T, cli *client.Client, tag string, files map[string]string) {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, name := range slices.Sorted(maps.Keys(files)) {
		// The headers the Builder writes (context.go), so that a file of equal content is a cache hit.
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: name, Mode: 0o644, Size: int64(len(files[name])),
			ModTime: time.Unix(0, 0), Format: tar.FormatPAX}); err != nil {
			t.Fatal(err)
		}
		if _, err := tw.Write([]byte(files[name])); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	resp, err := cli.ImageBuild(ctx, &buf, build.ImageBuildOptions{Tags: []string{tag}, Version: build.BuilderV1,
		Remove: true, ForceRemove: true})
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if err := readBuildStream(resp.Body, func(string) {}); err != nil {
		t.Fatalf("build %s: %v", tag, err)
	}
}

// list returns the IDs of the images matching every filter ("key=value"; "label" is implied for other keys than
// dangling), all of them (intermediates too) when all is set.
func list(ctx context.Context, t *testing.T, cli *client.Client, all bool, fs ...string) []string {
	t.Helper()
	args := filters.NewArgs()
	for _, f := range fs {
		if v, ok := strings.CutPrefix(f, "dangling="); ok {
			args.Add("dangling", v)
			continue
		}
		args.Add("label", f)
	}
	imgs, err := cli.ImageList(ctx, image.ListOptions{All: all, Filters: args})
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, img := range imgs {
		ids = append(ids, img.ID)
	}
	slices.Sort(ids)
	return ids
}

// removeRun removes what the test made: the tags of this run (their untagged parents go with them), then any image
// still labelled with the run, children before parents.
func removeRun(t *testing.T, cli *client.Client, label string) {
	ctx := context.Background()
	for range 5 {
		imgs, err := cli.ImageList(ctx, image.ListOptions{All: true, Filters: filters.NewArgs(filters.Arg("label", label))})
		if err != nil || len(imgs) == 0 {
			return
		}
		for _, img := range imgs {
			for _, tag := range img.RepoTags {
				_, _ = cli.ImageRemove(ctx, tag, image.RemoveOptions{PruneChildren: true})
			}
			_, _ = cli.ImageRemove(ctx, img.ID, image.RemoveOptions{PruneChildren: true})
		}
	}
	t.Errorf("images labelled %s left after cleanup", label)
}

// testWriter sends log output to t.Log.
type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(string(bytes.TrimRight(p, "\n")))
	return len(p), nil
}
