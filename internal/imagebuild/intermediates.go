package imagebuild

import (
	"context"
	"log/slog"
	"regexp"
	"strings"
	"time"

	"github.com/docker/docker/api/types/image"
)

// stepResult matches the output line the legacy builder prints with each step's resulting image ("---> 0123456789ab",
// after trimming); "---> Using cache" and "---> Running in …" do not match.
var stepResult = regexp.MustCompile(`^---> ([0-9a-f]{12})$`)

// usingCache is the line the legacy builder prints when a step's image comes from its cache.
const usingCache = "---> Using cache"

// madeImage is an image a build's own step committed.
type madeImage struct {
	id    string // short ID, as printed
	stage int    // 1 for the first FROM's stage, …
}

// buildOutput reads a legacy build's output for the images the build made: the result of every step that ran,
// which excludes FROM (its result is the base) and steps answered from the engine's cache (made by an earlier or
// concurrent build). A stage other than the last leaves its result untagged and childless (dangling), with the
// stage's earlier steps as its untagged parents; the last stage's steps are the parents of the tagged image.
type buildOutput struct {
	made   []madeImage
	stages int  // FROM steps seen
	from   bool // the current step is a FROM
	cached bool // the current step was answered from the cache
}

// line reads one trimmed output line.
func (o *buildOutput) line(l string) {
	if _, instr, ok := strings.Cut(l, " : "); ok && strings.HasPrefix(l, "Step ") {
		kw, _, _ := strings.Cut(strings.TrimSpace(instr), " ")
		o.from, o.cached = strings.EqualFold(kw, "FROM"), false
		if o.from {
			o.stages++
		}
		return
	}
	if l == usingCache {
		o.cached = true
		return
	}
	if m := stepResult.FindStringSubmatch(l); m != nil && !o.from && !o.cached {
		o.made = append(o.made, madeImage{id: m[1], stage: o.stages})
	}
}

// removeIntermediates removes the images a build made that nothing needs (ADR 0018): after a successful build,
// every image its steps committed outside the last stage; after a failed one, every image its steps committed.
// Children go before parents. An image is kept when it carries a tag or a digest, or when the engine will not
// delete it without force: it has a child image (a later stage builds FROM it, or another build took it from the
// cache) or a container uses it. Images the build only took from the cache are never touched: an earlier or
// concurrent build made them, and that build removes them. Failures are logged and skipped.
func (b *Builder) removeIntermediates(ctx context.Context, out *buildOutput, succeeded bool, log *slog.Logger) {
	// The build's ctx may have expired (a timed-out build): the clean-up gets its own bound.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
	defer cancel()
	removed := 0
	for i := len(out.made) - 1; i >= 0; i-- {
		m := out.made[i]
		if succeeded && m.stage == out.stages {
			continue // the tagged image and its parents
		}
		ins, err := b.Docker.ImageInspect(ctx, m.id)
		if err != nil || !strings.HasPrefix(strings.TrimPrefix(ins.ID, "sha256:"), m.id) {
			continue // gone already, or unreadable: nothing to do
		}
		if len(ins.RepoTags) > 0 || len(ins.RepoDigests) > 0 {
			continue
		}
		if _, err := b.Docker.ImageRemove(ctx, ins.ID, image.RemoveOptions{}); err != nil {
			log.Debug("keeping build intermediate", "image", m.id, "reason", err)
			continue
		}
		removed++
	}
	if removed > 0 {
		log.Info("removed the build's intermediate images", "count", removed, "succeeded", succeeded)
	}
}
