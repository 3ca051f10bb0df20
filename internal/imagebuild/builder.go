package imagebuild

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/docker/docker/api/types/build"
	"github.com/docker/docker/api/types/filters"
	"github.com/docker/docker/api/types/image"
	"github.com/docker/docker/client"
)

// Labels stamped on every image the Builder builds.
const (
	// LabelHarness names the harness an image is for.
	LabelHarness = "aicli.dev/harness"
	// LabelHash holds the full content hash the tag abbreviates.
	LabelHash = "aicli.dev/image-hash"
	// LabelManagedBy marks images this package built (value ManagedBy), so pruning never touches others.
	LabelManagedBy = "aicli.dev/managed-by"
	// ManagedBy is the LabelManagedBy value.
	ManagedBy = "aicli-imagebuild"
)

// RepoPrefix starts every image repository name: the image for harness h is RepoPrefix+h.
const RepoPrefix = "aicli-guest-"

// BuildCAName is the build-context file holding extra CA certificates a definition's build stages may trust (a
// TLS-intercepting proxy between this machine and a package registry). A Dockerfile that COPYs it gets it from
// Builder.BuildCAFile; the real-CLI definitions use it only in their npm stage, never in the final image.
const BuildCAName = "aicli-build-ca.crt"

// DefaultBuildCAFile is the host's CA bundle (Debian's path), BuildCAFile's default: builds trust what the host
// trusts.
const DefaultBuildCAFile = "/etc/ssl/certs/ca-certificates.crt"

// DefaultBuildTimeout bounds a build when Builder.BuildTimeout is zero.
const DefaultBuildTimeout = 10 * time.Minute

// hashLen is how many hex digits of the content hash go into the tag.
const hashLen = 12

// ImageAPI is the part of the Engine API client the Builder uses; *client.Client satisfies it.
type ImageAPI interface {
	ImageBuild(ctx context.Context, buildContext io.Reader, options build.ImageBuildOptions) (build.ImageBuildResponse, error)
	ImageInspect(ctx context.Context, imageID string, opts ...client.ImageInspectOption) (image.InspectResponse, error)
	ImageList(ctx context.Context, options image.ListOptions) ([]image.Summary, error)
	ImageRemove(ctx context.Context, imageID string, options image.RemoveOptions) ([]image.DeleteResponse, error)
}

// Builder ensures guest images exist, building them on demand. It never pulls: the definitions build FROM scratch
// or from a base present on the engine; a missing base that a definition under BaseDir describes is made locally
// (Rootfs) and imported first. Safe for concurrent use; concurrent Ensure calls for the same content share one
// build, and concurrent needs of one base share one making.
type Builder struct {
	// Docker is the engine client.
	Docker ImageAPI
	// Defs holds one directory per harness (see package images).
	Defs fs.FS
	// ArtifactDir holds the static binaries the Dockerfiles copy (aicli-guest, aicli-fake-cli, …); empty means the
	// directory of the running executable.
	ArtifactDir string
	// Logger receives build progress and results; nil means slog.Default().
	Logger *slog.Logger
	// BuildTimeout bounds one build; zero means DefaultBuildTimeout.
	BuildTimeout time.Duration
	// PruneOld removes older images of the same harness (by label) after a successful build; images still used
	// by a container are kept.
	PruneOld bool
	// BuildCAFile is the PEM bundle supplied as BuildCAName to definitions that copy it; "" means
	// DefaultBuildCAFile when it exists (else an empty file), "-" means an empty file. Its content is part of the
	// image hash.
	BuildCAFile string
	// Rootfs makes the root filesystem of a missing base image (see BaseDef); nil means &Debootstrap{} (root and
	// debootstrap needed). Bases are made only when Docker also implements BaseImporter.
	Rootfs RootfsMaker

	mu       sync.Mutex
	inflight map[string]*call // by tag
}

// call is one shared build.
type call struct {
	done      chan struct{}
	err       error
	lmu       sync.Mutex
	nextKey   int
	listeners map[int]func(string)
}

// listen registers a progress listener and returns its removal.
func (c *call) listen(fn func(string)) (remove func()) {
	c.lmu.Lock()
	defer c.lmu.Unlock()
	if c.listeners == nil {
		c.listeners = map[int]func(string){}
	}
	key := c.nextKey
	c.nextKey++
	c.listeners[key] = fn
	return func() {
		c.lmu.Lock()
		defer c.lmu.Unlock()
		delete(c.listeners, key)
	}
}

func (c *call) progress(line string) {
	c.lmu.Lock()
	keys := slices.Sorted(maps.Keys(c.listeners))
	ls := make([]func(string), 0, len(keys))
	for _, k := range keys {
		ls = append(ls, c.listeners[k])
	}
	c.lmu.Unlock()
	for _, l := range ls {
		l(line)
	}
}

// Harnesses lists the harnesses the definitions provide: every top-level directory holding a Dockerfile.
func (b *Builder) Harnesses() ([]string, error) {
	entries, err := fs.ReadDir(b.Defs, ".")
	if err != nil {
		return nil, fmt.Errorf("image definitions: %w", err)
	}
	var out []string
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		if _, err := fs.Stat(b.Defs, e.Name()+"/Dockerfile"); err == nil {
			out = append(out, e.Name())
		}
	}
	return out, nil
}

// Ref returns the image reference Ensure would use for harness with the current definition and artifacts, without
// touching the engine.
func (b *Builder) Ref(harness string) (string, error) {
	bc, err := b.context(harness)
	if err != nil {
		return "", err
	}
	return tagFor(harness, bc.hash), nil
}

func tagFor(harness, hash string) string { return RepoPrefix + harness + ":" + hash[:hashLen] }

func (b *Builder) context(harness string) (*buildContext, error) {
	if harness == "" || strings.ContainsAny(harness, "/\\.") {
		return nil, fmt.Errorf("imagebuild: bad harness name %q", harness)
	}
	if _, err := fs.Stat(b.Defs, harness+"/Dockerfile"); err != nil {
		known, _ := b.Harnesses()
		return nil, fmt.Errorf("imagebuild: no image definition for harness %q (known: %s): %w",
			harness, strings.Join(known, ", "), err)
	}
	dir, err := b.artifactDir()
	if err != nil {
		return nil, err
	}
	bc, err := assemble(b.Defs, harness, dir, map[string]func() ([]byte, error){BuildCAName: b.buildCA})
	if err != nil {
		return nil, err
	}
	df, err := fs.ReadFile(b.Defs, harness+"/Dockerfile")
	if err != nil {
		return nil, fmt.Errorf("imagebuild: %w", err)
	}
	bases, err := b.baseHashes(df)
	if err != nil {
		return nil, fmt.Errorf("imagebuild: %s: %w", harness, err)
	}
	if len(bases) > 0 {
		// A base this package makes is part of the content: a changed base definition is a new tag.
		h := sha256.New()
		fmt.Fprintf(h, "%s\x00bases\x00%s", bc.hash, strings.Join(bases, "\x00"))
		bc.hash = hex.EncodeToString(h.Sum(nil))
	}
	return bc, nil
}

func (b *Builder) buildCA() ([]byte, error) {
	switch b.BuildCAFile {
	case "-":
		return []byte{}, nil
	case "":
		data, err := os.ReadFile(DefaultBuildCAFile)
		if errors.Is(err, fs.ErrNotExist) {
			return []byte{}, nil
		}
		if err != nil {
			return nil, fmt.Errorf("imagebuild: build CA bundle: %w", err)
		}
		return data, nil
	default:
		data, err := os.ReadFile(b.BuildCAFile)
		if err != nil {
			return nil, fmt.Errorf("imagebuild: build CA bundle: %w", err)
		}
		return data, nil
	}
}

func (b *Builder) artifactDir() (string, error) {
	if b.ArtifactDir != "" {
		return b.ArtifactDir, nil
	}
	exe, err := os.Executable()
	if err != nil {
		return "", fmt.Errorf("imagebuild: locate artifact dir: %w", err)
	}
	return filepath.Dir(exe), nil
}

// Ensure returns a reference to an image for harness built from the current definition and artifacts, building
// it if no image with that content-hash tag exists. progress (may be nil) receives build output lines.
func (b *Builder) Ensure(ctx context.Context, harness string, progress func(string)) (string, error) {
	bc, err := b.context(harness)
	if err != nil {
		return "", err
	}
	tag := tagFor(harness, bc.hash)
	if _, err := b.Docker.ImageInspect(ctx, tag); err == nil {
		return tag, nil
	} else if !cerrdefs.IsNotFound(err) {
		return "", fmt.Errorf("imagebuild: inspect %s: %w", tag, err)
	}

	if err := b.ensureBases(ctx, harness, progress); err != nil {
		return "", err
	}
	err = b.shared(ctx, tag, progress, func(bctx context.Context, p func(string)) error {
		return b.build(bctx, harness, tag, bc, p)
	})
	if err != nil {
		return "", err
	}
	return tag, nil
}

// shared runs work once per key for all concurrent callers: the first caller starts it, later ones join, and every
// caller's progress receives the output while it waits. The work runs detached from any one caller's ctx (a caller
// giving up must not fail the others), bounded by BuildTimeout.
func (b *Builder) shared(ctx context.Context, key string, progress func(string),
	work func(ctx context.Context, progress func(string)) error) error {
	b.mu.Lock()
	if b.inflight == nil {
		b.inflight = map[string]*call{}
	}
	c, joined := b.inflight[key]
	if !joined {
		c = &call{done: make(chan struct{})}
		b.inflight[key] = c
	}
	if progress != nil {
		// A caller that gives up stops receiving progress.
		defer c.listen(progress)()
	}
	b.mu.Unlock()

	if !joined {
		timeout := b.BuildTimeout
		if timeout <= 0 {
			timeout = DefaultBuildTimeout
		}
		bctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), timeout)
		go func() {
			defer cancel()
			c.err = work(bctx, c.progress)
			b.mu.Lock()
			delete(b.inflight, key)
			b.mu.Unlock()
			close(c.done)
		}()
	}
	select {
	case <-c.done:
		return c.err
	case <-ctx.Done():
		return fmt.Errorf("imagebuild: waiting for %s: %w", key, ctx.Err())
	}
}

// BaseImageMissingError says a FROM image of a definition is not present on the engine and could not be made.
// Nothing is pulled: a base with a definition under BaseDir is made locally (Err says why that failed); any other
// base must be built or imported first.
type BaseImageMissingError struct {
	// Harness is the definition ("" for EnsureBase).
	Harness string
	// Image is the missing base.
	Image string
	// Err is why making it from its base definition failed; nil when no definition describes it.
	Err error
}

// Error implements error.
func (e *BaseImageMissingError) Error() string {
	if e.Harness == "" {
		return fmt.Sprintf("imagebuild: base image %s could not be made: %v", e.Image, e.Err)
	}
	if e.Err != nil {
		return fmt.Sprintf("imagebuild: %s: base image %s is not present on the engine and making it failed: %v",
			e.Harness, e.Image, e.Err)
	}
	return fmt.Sprintf("imagebuild: %s: base image %s is not present on the engine (nothing is pulled: build or "+
		"import it first)", e.Harness, e.Image)
}

// Unwrap returns Err.
func (e *BaseImageMissingError) Unwrap() error { return e.Err }

func (b *Builder) build(ctx context.Context, harness, tag string, bc *buildContext, progress func(string)) error {
	log := b.logger().With("harness", harness, "tag", tag)
	log.Info("building guest image")
	pr, pw := io.Pipe()
	go func() { pw.CloseWithError(bc.writeTar(pw)) }()
	defer pr.Close()
	resp, err := b.Docker.ImageBuild(ctx, pr, build.ImageBuildOptions{
		Tags:        []string{tag},
		Dockerfile:  "Dockerfile",
		Version:     build.BuilderV1,
		PullParent:  false,
		Remove:      true,
		ForceRemove: true,
		Labels: map[string]string{
			LabelHarness:   harness,
			LabelHash:      bc.hash,
			LabelManagedBy: ManagedBy,
		},
	})
	if err != nil {
		return fmt.Errorf("imagebuild: build %s: %w", tag, err)
	}
	defer resp.Body.Close()
	var out buildOutput
	if err := readBuildStream(resp.Body, func(line string) {
		log.Debug("build", "line", line)
		out.line(line)
		progress(line)
	}); err != nil {
		b.removeIntermediates(ctx, &out, false, log)
		return fmt.Errorf("imagebuild: build %s: %w", tag, err)
	}
	if _, err := b.Docker.ImageInspect(ctx, tag); err != nil {
		b.removeIntermediates(ctx, &out, false, log)
		return fmt.Errorf("imagebuild: build %s finished but the tag is missing: %w", tag, err)
	}
	log.Info("built guest image")
	b.removeIntermediates(ctx, &out, true, log)
	if b.PruneOld {
		b.prune(ctx, harness, bc.hash, log)
	}
	return nil
}

// buildMessage is one message of the engine's build output stream (the subset this package reads).
type buildMessage struct {
	Stream      string `json:"stream"`
	Status      string `json:"status"`
	Error       string `json:"error"`
	ErrorDetail *struct {
		Message string `json:"message"`
	} `json:"errorDetail"`
}

// readBuildStream decodes the engine's JSON message stream, forwarding each output line, and returns the first
// error message the stream carries.
func readBuildStream(r io.Reader, line func(string)) error {
	dec := json.NewDecoder(r)
	for {
		var m buildMessage
		if err := dec.Decode(&m); errors.Is(err, io.EOF) {
			return nil
		} else if err != nil {
			return fmt.Errorf("read build output: %w", err)
		}
		if m.ErrorDetail != nil && m.ErrorDetail.Message != "" {
			return errors.New(strings.TrimSpace(m.ErrorDetail.Message))
		}
		if m.Error != "" {
			return errors.New(strings.TrimSpace(m.Error))
		}
		for _, s := range []string{m.Stream, m.Status} {
			for _, l := range strings.Split(strings.TrimRight(s, "\n"), "\n") {
				if l = strings.TrimSpace(l); l != "" {
					line(l)
				}
			}
		}
	}
}

// prune removes this package's images of harness whose hash differs from keep. Failures (typically an image in
// use by a container) are logged and skipped.
func (b *Builder) prune(ctx context.Context, harness, keep string, log *slog.Logger) {
	imgs, err := b.Docker.ImageList(ctx, image.ListOptions{Filters: filters.NewArgs(
		filters.Arg("label", LabelManagedBy+"="+ManagedBy),
		filters.Arg("label", LabelHarness+"="+harness),
	)})
	if err != nil {
		log.Warn("prune: list images", "err", err)
		return
	}
	for _, img := range imgs {
		if img.Labels[LabelHash] == keep {
			continue
		}
		for _, t := range img.RepoTags {
			if _, err := b.Docker.ImageRemove(ctx, t, image.RemoveOptions{PruneChildren: true}); err != nil {
				log.Info("prune: keeping old image", "image", t, "reason", err)
				continue
			}
			log.Info("pruned old guest image", "image", t)
		}
	}
}

// BuiltImage is one image this package built, as the engine lists it.
type BuiltImage struct {
	// Ref is the image's first repository tag (its id when untagged).
	Ref string
	// Harness is the harness the image is for.
	Harness string
	// SizeBytes is the image's size on the engine, layers shared with other images included.
	SizeBytes int64
}

// Images lists the images this package built (any harness) with their sizes.
func (b *Builder) Images(ctx context.Context) ([]BuiltImage, error) {
	imgs, err := b.Docker.ImageList(ctx, image.ListOptions{Filters: filters.NewArgs(filters.Arg("label", LabelManagedBy+"="+ManagedBy))})
	if err != nil {
		return nil, fmt.Errorf("listing guest images: %w", err)
	}
	out := make([]BuiltImage, 0, len(imgs))
	for _, img := range imgs {
		ref := img.ID
		if len(img.RepoTags) > 0 {
			ref = img.RepoTags[0]
		}
		out = append(out, BuiltImage{Ref: ref, Harness: img.Labels[LabelHarness], SizeBytes: img.Size})
	}
	return out, nil
}

func (b *Builder) logger() *slog.Logger {
	if b.Logger != nil {
		return b.Logger
	}
	return slog.Default()
}
