package imagebuild

import (
	"context"
	"io"
	"log/slog"
	"slices"
	"strings"
	"testing"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/docker/docker/api/types/build"
	"github.com/docker/docker/api/types/image"
	"github.com/docker/docker/client"
)

// legacyStream is a three-stage build's output as the 20.10 engine's legacy builder writes it: stage "shared" took
// its first two steps from the cache (an earlier build made them), stage "solo" ran every step, and the final
// stage's last image is the tagged one. Images are named by digit: base 0, shared 1 2 3, solo 6 7, final 4 5.
const legacyStream = `{"stream":"Step 1/11 : ARG V=1"}
{"stream":"\n"}
{"stream":"Step 2/11 : FROM aicli-test-base:1 AS shared"}
{"stream":"\n"}
{"stream":" ---\u003e 000000000000\n"}
{"stream":"Step 3/11 : LABEL x=1"}
{"stream":"\n"}
{"stream":" ---\u003e Using cache\n"}
{"stream":" ---\u003e 111111111111\n"}
{"stream":"Step 4/11 : COPY a /a"}
{"stream":"\n"}
{"stream":" ---\u003e Using cache\n"}
{"stream":" ---\u003e 222222222222\n"}
{"stream":"Step 5/11 : COPY b /b"}
{"stream":"\n"}
{"stream":" ---\u003e 333333333333\n"}
{"aux":{"ID":"sha256:333333333333ffffffffffffffffffffffffffffffffffffffffffffffffffff"}}
{"stream":"Step 6/11 : from aicli-test-base:1 as solo"}
{"stream":"\n"}
{"stream":" ---\u003e 000000000000\n"}
{"stream":"Step 7/11 : RUN true"}
{"stream":"\n"}
{"stream":" ---\u003e Running in c5170bed98b4\n"}
{"stream":"Removing intermediate container c5170bed98b4\n"}
{"stream":" ---\u003e 666666666666\n"}
{"stream":"Step 8/11 : COPY s /s"}
{"stream":"\n"}
{"stream":" ---\u003e 777777777777\n"}
{"aux":{"ID":"sha256:777777777777ffffffffffffffffffffffffffffffffffffffffffffffffffff"}}
{"stream":"Step 9/11 : FROM aicli-test-base:1"}
{"stream":"\n"}
{"stream":" ---\u003e 000000000000\n"}
{"stream":"Step 10/11 : COPY --from=shared /b /b"}
{"stream":"\n"}
{"stream":" ---\u003e 444444444444\n"}
{"stream":"Step 11/11 : COPY c /c"}
{"stream":"\n"}
{"stream":" ---\u003e 555555555555\n"}
{"aux":{"ID":"sha256:555555555555ffffffffffffffffffffffffffffffffffffffffffffffffffff"}}
{"stream":"Successfully built 555555555555\n"}
{"stream":"Successfully tagged aicli-guest-h:0123456789ab\n"}
`

func TestBuildOutputNamesTheImagesTheBuildMade(t *testing.T) {
	var out buildOutput
	var lines []string
	if err := readBuildStream(strings.NewReader(legacyStream), func(l string) {
		lines = append(lines, l)
		out.line(l)
	}); err != nil {
		t.Fatal(err)
	}
	// Neither the FROM steps' result (the base) nor the cached steps' are the build's.
	want := []madeImage{{"333333333333", 1}, {"666666666666", 2}, {"777777777777", 2}, {"444444444444", 3}, {"555555555555", 3}}
	if !slices.Equal(out.made, want) || out.stages != 3 {
		t.Fatalf("made %v in %d stages, want %v in 3", out.made, out.stages, want)
	}
	if !slices.Contains(lines, usingCache) {
		t.Fatalf("progress lines %q", lines)
	}
}

// chainImage is one image of chainEngine.
type chainImage struct {
	parent string
	tags   []string
	inUse  bool // a container uses it
}

// chainEngine is an ImageAPI over a parent graph with the engine's deletion rules: an image with a child or a
// container is not deleted without force.
type chainEngine struct {
	images  map[string]*chainImage // by full ID
	removed []string
}

func full(short string) string { return "sha256:" + short + strings.Repeat("f", 64-len(short)) }

// resolve finds an image by full ID or by a prefix of its hex digits, as the engine does.
func (e *chainEngine) resolve(ref string) string {
	for id := range e.images {
		if id == ref || strings.HasPrefix(strings.TrimPrefix(id, "sha256:"), strings.TrimPrefix(ref, "sha256:")) {
			return id
		}
	}
	return ""
}

func (e *chainEngine) ImageInspect(_ context.Context, ref string, _ ...client.ImageInspectOption) (image.InspectResponse, error) {
	id := e.resolve(ref)
	if id == "" {
		return image.InspectResponse{}, cerrdefs.ErrNotFound.WithMessage("no such image: " + ref)
	}
	img := e.images[id]
	return image.InspectResponse{ID: id, Parent: img.parent, RepoTags: img.tags}, nil
}

func (e *chainEngine) ImageRemove(_ context.Context, ref string, o image.RemoveOptions) ([]image.DeleteResponse, error) {
	id := e.resolve(ref)
	if id == "" {
		return nil, cerrdefs.ErrNotFound.WithMessage("no such image: " + ref)
	}
	if o.Force || o.PruneChildren {
		return nil, cerrdefs.ErrInvalidArgument.WithMessage("force or parent pruning asked")
	}
	for _, img := range e.images {
		if img.parent == id {
			return nil, cerrdefs.ErrConflict.WithMessage("image has dependent child images")
		}
	}
	if e.images[id].inUse {
		return nil, cerrdefs.ErrConflict.WithMessage("image is being used by a stopped container")
	}
	delete(e.images, id)
	e.removed = append(e.removed, strings.TrimPrefix(id, "sha256:")[:12])
	return []image.DeleteResponse{{Deleted: id}}, nil
}

func (e *chainEngine) ImageBuild(context.Context, io.Reader, build.ImageBuildOptions) (build.ImageBuildResponse, error) {
	panic("not used")
}

func (e *chainEngine) ImageList(context.Context, image.ListOptions) ([]image.Summary, error) {
	panic("not used")
}

func TestRemoveIntermediates(t *testing.T) {
	graph := func() map[string]*chainImage {
		return map[string]*chainImage{
			full("000000000000"): {tags: []string{"aicli-test-base:1"}},
			full("111111111111"): {parent: full("000000000000")},
			full("222222222222"): {parent: full("111111111111")},
			full("333333333333"): {parent: full("222222222222")},
			full("666666666666"): {parent: full("000000000000")},
			full("777777777777"): {parent: full("666666666666")},
			full("444444444444"): {parent: full("000000000000")},
			full("555555555555"): {parent: full("444444444444"), tags: []string{"aicli-guest-h:0123456789ab"}},
		}
	}
	stream := func(s string) *buildOutput {
		var o buildOutput
		_ = readBuildStream(strings.NewReader(s), o.line)
		return &o
	}
	failed := legacyStream[:strings.Index(legacyStream, `{"stream":"Step 11/11`)] // the last step failed
	for _, tc := range []struct {
		name      string
		stream    string
		failed    bool
		change    func(map[string]*chainImage)
		want      []string
		wantStays []string
	}{
		{name: "the made images outside the last stage go, children first; cached ones stay",
			want: []string{"777777777777", "666666666666", "333333333333"}, wantStays: []string{"111111111111", "222222222222"}},
		{name: "an image with a child stays",
			change: func(g map[string]*chainImage) {
				g[full("99999999999a")] = &chainImage{parent: full("333333333333")} // another build took it from the cache
			},
			want: []string{"777777777777", "666666666666"}},
		{name: "a tagged image stays",
			change: func(g map[string]*chainImage) { g[full("666666666666")].tags = []string{"someone:x"} },
			want:   []string{"777777777777", "333333333333"}},
		{name: "an image a container uses stays, and so do its parents",
			change: func(g map[string]*chainImage) { g[full("777777777777")].inUse = true },
			want:   []string{"333333333333"}},
		{name: "an image already gone is no error",
			change: func(g map[string]*chainImage) { delete(g, full("777777777777")) },
			want:   []string{"666666666666", "333333333333"}},
		{name: "a failed build's made images all go", stream: failed, failed: true,
			change: func(g map[string]*chainImage) { delete(g, full("555555555555")) },
			want:   []string{"444444444444", "777777777777", "666666666666", "333333333333"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			eng := &chainEngine{images: graph()}
			if tc.change != nil {
				tc.change(eng.images)
			}
			s := tc.stream
			if s == "" {
				s = legacyStream
			}
			b := &Builder{Docker: eng}
			b.removeIntermediates(t.Context(), stream(s), !tc.failed, slog.New(slog.DiscardHandler))
			if !slices.Equal(eng.removed, tc.want) {
				t.Fatalf("removed %q, want %q", eng.removed, tc.want)
			}
			for _, id := range append(tc.wantStays, "000000000000") {
				if _, ok := eng.images[full(id)]; !ok {
					t.Fatalf("%s was removed", id)
				}
			}
			if _, ok := eng.images[full("555555555555")]; !ok && !tc.failed {
				t.Fatal("the built image was removed")
			}
		})
	}
}
