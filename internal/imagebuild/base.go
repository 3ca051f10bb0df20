package imagebuild

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path"
	"regexp"
	"slices"
	"strings"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/docker/docker/api/types/image"
)

// LabelBaseHash holds the sha256 of the base definition a locally made base image was made from.
const LabelBaseHash = "aicli.dev/base-hash"

// BaseDir is the directory of Builder.Defs that holds base definitions: files named "*.base" (see BaseDef).
const BaseDir = "base"

// baseSuffix names a base definition file.
const baseSuffix = ".base"

// BaseDef describes a base image the Builder can make locally when the engine lacks it: a Debian root filesystem
// made by debootstrap and imported under Tag. It is parsed from a "*.base" file of lines "key value…" with #
// comments; keys tag, suite, variant (default minbase), include (repeatable, comma or space separated) and strip
// (repeatable: glob patterns relative to the root filesystem, removed before import).
type BaseDef struct {
	// Tag is the image reference Dockerfiles name in FROM.
	Tag string
	// Suite is the Debian suite (e.g. trixie).
	Suite string
	// Variant is debootstrap's --variant.
	Variant string
	// Include lists the extra packages (debootstrap --include).
	Include []string
	// Strip lists glob patterns of paths removed from the root filesystem before import.
	Strip []string
	// Hash is the hex sha256 of the definition file; it labels the image (LabelBaseHash).
	Hash string
	// File is the definition's path inside Defs.
	File string
}

var (
	// debianWord matches suite, variant and package names.
	debianWord = regexp.MustCompile(`^[a-z0-9][a-z0-9+.-]*$`)
	// imageRef is a conservative image reference (repository[:tag]).
	imageRef = regexp.MustCompile(`^[a-z0-9]+(?:[._/-][a-z0-9]+)*(?::[A-Za-z0-9_][A-Za-z0-9_.-]{0,127})?$`)
)

// ParseBaseDef parses a base definition file (see BaseDef).
func ParseBaseDef(name string, data []byte) (*BaseDef, error) {
	sum := sha256.Sum256(data)
	d := &BaseDef{Variant: "minbase", Hash: hex.EncodeToString(sum[:]), File: name}
	sc := bufio.NewScanner(bytes.NewReader(data))
	n := 0
	for sc.Scan() {
		n++
		line, _, _ := strings.Cut(sc.Text(), "#")
		key, rest, _ := strings.Cut(strings.TrimSpace(line), " ")
		rest = strings.TrimSpace(rest)
		if key == "" {
			continue
		}
		bad := func(why string) error { return fmt.Errorf("%s:%d: %s: %q", name, n, why, sc.Text()) }
		switch key {
		case "tag":
			if !imageRef.MatchString(rest) {
				return nil, bad("want an image reference repository[:tag]")
			}
			d.Tag = rest
		case "suite", "variant":
			if !debianWord.MatchString(rest) {
				return nil, bad("want one word")
			}
			if key == "suite" {
				d.Suite = rest
			} else {
				d.Variant = rest
			}
		case "include":
			for _, p := range strings.FieldsFunc(rest, func(r rune) bool { return r == ',' || r == ' ' || r == '\t' }) {
				if !debianWord.MatchString(p) {
					return nil, bad("bad package name " + p)
				}
				if !slices.Contains(d.Include, p) {
					d.Include = append(d.Include, p)
				}
			}
		case "strip":
			p := path.Clean(strings.TrimPrefix(rest, "/"))
			if rest == "" || strings.ContainsAny(rest, " \t") || p == "." || p == ".." || strings.HasPrefix(p, "../") {
				return nil, bad("want one relative path pattern inside the root filesystem")
			}
			if _, err := path.Match(p, ""); err != nil {
				return nil, bad(err.Error())
			}
			d.Strip = append(d.Strip, p)
		default:
			return nil, bad("unknown key " + key)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if d.Tag == "" || d.Suite == "" {
		return nil, fmt.Errorf("%s: tag and suite are required", name)
	}
	return d, nil
}

// BaseDefs returns the base definitions in Defs (files BaseDir/*.base), keyed by the tag they make. A missing
// BaseDir is no definitions.
func (b *Builder) BaseDefs() (map[string]*BaseDef, error) {
	out := map[string]*BaseDef{}
	entries, err := fs.ReadDir(b.Defs, BaseDir)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return out, nil
		}
		return nil, fmt.Errorf("imagebuild: base definitions: %w", err)
	}
	for _, e := range entries {
		if e.IsDir() || !strings.HasSuffix(e.Name(), baseSuffix) {
			continue
		}
		name := BaseDir + "/" + e.Name()
		data, err := fs.ReadFile(b.Defs, name)
		if err != nil {
			return nil, fmt.Errorf("imagebuild: %w", err)
		}
		d, err := ParseBaseDef(name, data)
		if err != nil {
			return nil, fmt.Errorf("imagebuild: %w", err)
		}
		if prev, dup := out[d.Tag]; dup {
			return nil, fmt.Errorf("imagebuild: %s and %s both define %s", prev.File, d.File, d.Tag)
		}
		out[d.Tag] = d
	}
	return out, nil
}

// baseHashes returns "tag=hash" for every FROM base of dockerfile that a base definition describes, so a changed
// base definition changes the content hash (and tag) of every image built on it.
func (b *Builder) baseHashes(dockerfile []byte) ([]string, error) {
	bases, err := baseImages(dockerfile)
	if err != nil {
		return nil, err
	}
	defs, err := b.BaseDefs()
	if err != nil {
		return nil, err
	}
	var out []string
	for _, img := range bases {
		if d := defs[img]; d != nil {
			out = append(out, img+"="+d.Hash)
		}
	}
	return out, nil
}

// RootfsMaker makes the root filesystem a base definition describes and streams it as a tar archive. Closing the
// stream releases everything the maker holds (processes, temporary directories) and reports the first error of
// producing it.
type RootfsMaker interface {
	MakeRootfs(ctx context.Context, def BaseDef, progress func(string)) (io.ReadCloser, error)
}

// BaseImporter is the Engine API call that turns a root filesystem tarball into an image; *client.Client
// satisfies it. The Builder makes missing bases only when its Docker client implements it.
type BaseImporter interface {
	ImageImport(ctx context.Context, source image.ImportSource, ref string, options image.ImportOptions) (io.ReadCloser, error)
}

// ensureBases makes sure every FROM image of harness's Dockerfile exists on the engine, making a missing (or
// outdated, when this package made it) base from its definition. Concurrent callers share one making per tag.
func (b *Builder) ensureBases(ctx context.Context, harness string, progress func(string)) error {
	df, err := fs.ReadFile(b.Defs, harness+"/Dockerfile")
	if err != nil {
		return fmt.Errorf("imagebuild: %w", err)
	}
	bases, err := baseImages(df)
	if err != nil {
		return fmt.Errorf("imagebuild: %s: %w", harness, err)
	}
	if len(bases) == 0 {
		return nil
	}
	defs, err := b.BaseDefs()
	if err != nil {
		return err
	}
	for _, img := range bases {
		if err := b.ensureBase(ctx, harness, img, defs[img], progress); err != nil {
			return err
		}
	}
	return nil
}

// EnsureBase makes sure the base image tag that a definition under BaseDir describes exists on the engine, making
// it (or remaking one this package made from an older definition) if needed; progress (may be nil) receives the
// making's output. Ensure does this on its own; EnsureBase lets a caller warm the base ahead of the first build.
func (b *Builder) EnsureBase(ctx context.Context, tag string, progress func(string)) error {
	defs, err := b.BaseDefs()
	if err != nil {
		return err
	}
	def := defs[tag]
	if def == nil {
		return fmt.Errorf("imagebuild: no base definition under %s/ makes %s", BaseDir, tag)
	}
	return b.ensureBase(ctx, "", tag, def, progress)
}

// ensureBase ensures one FROM image img of harness; def (nil when no definition describes img) says how to make it.
func (b *Builder) ensureBase(ctx context.Context, harness, img string, def *BaseDef, progress func(string)) error {
	ins, err := b.Docker.ImageInspect(ctx, img)
	switch {
	case err == nil:
		if def == nil || !outdatedBase(ins, def) {
			return nil
		}
		b.logger().Info("base image is outdated: remaking it", "base", img, "definition", def.File)
	case cerrdefs.IsNotFound(err):
		if def == nil {
			return &BaseImageMissingError{Harness: harness, Image: img}
		}
	default:
		return fmt.Errorf("imagebuild: inspect base %s: %w", img, err)
	}
	imp, ok := b.Docker.(BaseImporter)
	if !ok {
		return &BaseImageMissingError{Harness: harness, Image: img,
			Err: fmt.Errorf("the engine client cannot import images")}
	}
	err = b.shared(ctx, baseKey(img), progress, func(bctx context.Context, p func(string)) error {
		return b.makeBase(bctx, imp, def, p)
	})
	if err != nil {
		if ctx.Err() != nil {
			return err // this caller gave up; the making goes on for others
		}
		return &BaseImageMissingError{Harness: harness, Image: img, Err: err}
	}
	return nil
}

// baseKey is the in-flight key of making base tag (distinct from any image build's key).
func baseKey(tag string) string { return "base " + tag }

// outdatedBase reports whether ins is an image this package made from another version of def. Images made
// elsewhere (a user's own base under the same tag) are never replaced.
func outdatedBase(ins image.InspectResponse, def *BaseDef) bool {
	if ins.Config == nil {
		return false
	}
	l := ins.Config.Labels
	return l[LabelManagedBy] == ManagedBy && l[LabelBaseHash] != def.Hash
}

// makeBase makes def's root filesystem and imports it under def.Tag.
func (b *Builder) makeBase(ctx context.Context, imp BaseImporter, def *BaseDef, progress func(string)) error {
	log := b.logger().With("base", def.Tag, "suite", def.Suite)
	log.Info("making base image")
	say := func(format string, args ...any) {
		line := fmt.Sprintf("base %s: ", def.Tag) + fmt.Sprintf(format, args...)
		log.Debug("base", "line", line)
		progress(line)
	}
	maker := b.Rootfs
	if maker == nil {
		maker = &Debootstrap{}
	}
	say("making the root filesystem (%s %s, include %s)", def.Variant, def.Suite, strings.Join(def.Include, ","))
	rootfs, err := maker.MakeRootfs(ctx, *def, func(l string) {
		log.Debug("rootfs", "line", l)
		progress(l)
	})
	if err != nil {
		return fmt.Errorf("make root filesystem for %s: %w", def.Tag, err)
	}
	defer rootfs.Close()
	say("importing")
	resp, err := imp.ImageImport(ctx, image.ImportSource{Source: rootfs, SourceName: "-"}, def.Tag, image.ImportOptions{
		Message: "aicli imagebuild from " + def.File,
		Changes: []string{
			"LABEL " + LabelBaseHash + "=" + def.Hash,
			"LABEL " + LabelManagedBy + "=" + ManagedBy,
			`CMD ["/bin/bash"]`,
		},
	})
	if err != nil {
		return fmt.Errorf("import %s: %w", def.Tag, err)
	}
	streamErr := readBuildStream(resp, func(string) {})
	_ = resp.Close()
	closeErr := rootfs.Close()
	if streamErr != nil {
		return fmt.Errorf("import %s: %w", def.Tag, streamErr)
	}
	if closeErr != nil {
		return fmt.Errorf("import %s: root filesystem: %w", def.Tag, closeErr)
	}
	ins, err := b.Docker.ImageInspect(ctx, def.Tag)
	if err != nil {
		return fmt.Errorf("import %s finished but the tag is missing: %w", def.Tag, err)
	}
	if ins.Config == nil || ins.Config.Labels[LabelBaseHash] != def.Hash {
		return fmt.Errorf("import %s: the engine did not keep the %s label", def.Tag, LabelBaseHash)
	}
	say("ready (%d MB)", ins.Size>>20)
	log.Info("made base image", "bytes", ins.Size)
	return nil
}
