package imagebuild

import (
	"archive/tar"
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
)

// dirsSuffix marks a definition file that describes an empty directory tree; "<name>.dirs" becomes "<name>.tar" in
// the build context (ADD it to unpack the tree with its owners and modes).
const dirsSuffix = ".dirs"

// contextFile is one regular file of the build context.
type contextFile struct {
	name string // slash-separated path inside the context
	mode int64
	data []byte
}

// buildContext is an assembled, hashed build context.
type buildContext struct {
	files []contextFile // sorted by name
	hash  string        // hex sha256 over names, modes and contents
}

// MissingArtifactError says a file the Dockerfile copies is neither in the definition nor in the artifact
// directory.
type MissingArtifactError struct {
	// Name is the missing file.
	Name string
	// Dir is the artifact directory that was searched.
	Dir string
}

// Error implements error.
func (e *MissingArtifactError) Error() string {
	return fmt.Sprintf("%s not found in %s: run make build", e.Name, e.Dir)
}

// assemble collects the build context for one harness: every file of the definition directory (".dirs" files
// turned into tars), plus each file a COPY/ADD line names that the definition does not hold, taken from extras
// (files the Builder supplies, read only when named) or else from the artifact directory.
func assemble(defs fs.FS, harness, artifactDir string, extras map[string]func() ([]byte, error)) (*buildContext, error) {
	sub, err := fs.Sub(defs, harness)
	if err != nil {
		return nil, fmt.Errorf("definition %s: %w", harness, err)
	}
	dockerfile, err := fs.ReadFile(sub, "Dockerfile")
	if err != nil {
		return nil, fmt.Errorf("definition %s: %w", harness, err)
	}
	var files []contextFile
	have := map[string]bool{}
	err = fs.WalkDir(sub, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := fs.ReadFile(sub, p)
		if err != nil {
			return err
		}
		if strings.HasSuffix(p, dirsSuffix) {
			tarName := strings.TrimSuffix(p, dirsSuffix) + ".tar"
			tb, err := dirsTar(data)
			if err != nil {
				return fmt.Errorf("%s: %w", p, err)
			}
			files = append(files, contextFile{name: tarName, mode: 0o644, data: tb})
			have[tarName] = true
			return nil
		}
		files = append(files, contextFile{name: p, mode: 0o644, data: data})
		have[p] = true
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("definition %s: %w", harness, err)
	}
	sources, err := copySources(dockerfile)
	if err != nil {
		return nil, fmt.Errorf("definition %s: %w", harness, err)
	}
	for _, src := range sources {
		if have[src] || dirInFS(sub, src) {
			continue
		}
		if strings.ContainsAny(src, "/*?[") || src == "." || src == ".." {
			return nil, fmt.Errorf("definition %s: COPY source %q is not in the definition and is not a plain "+
				"artifact file name", harness, src)
		}
		var data []byte
		mode := int64(0o644)
		if extra := extras[src]; extra != nil {
			data, err = extra()
		} else {
			data, mode, err = readArtifact(artifactDir, src)
		}
		if err != nil {
			return nil, err
		}
		files = append(files, contextFile{name: src, mode: mode, data: data})
		have[src] = true
	}
	slices.SortFunc(files, func(a, b contextFile) int { return strings.Compare(a.name, b.name) })
	h := sha256.New()
	for _, f := range files {
		fmt.Fprintf(h, "%s\x00%o\x00%d\x00", f.name, f.mode, len(f.data))
		h.Write(f.data)
	}
	return &buildContext{files: files, hash: hex.EncodeToString(h.Sum(nil))}, nil
}

func dirInFS(fsys fs.FS, p string) bool {
	p = strings.TrimSuffix(path.Clean(p), "/")
	fi, err := fs.Stat(fsys, p)
	return err == nil && fi.IsDir()
}

func readArtifact(dir, name string) ([]byte, int64, error) {
	p := filepath.Join(dir, name)
	fi, err := os.Stat(p)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, 0, &MissingArtifactError{Name: name, Dir: dir}
	}
	if err != nil {
		return nil, 0, fmt.Errorf("artifact %s: %w", name, err)
	}
	if !fi.Mode().IsRegular() {
		return nil, 0, fmt.Errorf("artifact %s in %s is not a regular file", name, dir)
	}
	data, err := os.ReadFile(p)
	if err != nil {
		return nil, 0, fmt.Errorf("artifact %s: %w", name, err)
	}
	mode := int64(0o644)
	if fi.Mode()&0o111 != 0 {
		mode = 0o755
	}
	return data, mode, nil
}

// instruction is one logical Dockerfile line: the upper-cased keyword and its arguments.
type instruction struct {
	keyword string
	args    []string
	line    string
}

// instructions splits a Dockerfile into logical instructions, skipping comments and joining continuations.
func instructions(dockerfile []byte) ([]instruction, error) {
	var out []instruction
	var logical strings.Builder
	flush := func() {
		line := strings.TrimSpace(logical.String())
		logical.Reset()
		if line == "" || strings.HasPrefix(line, "#") {
			return
		}
		kw, rest, _ := strings.Cut(line, " ")
		out = append(out, instruction{keyword: strings.ToUpper(kw), args: strings.Fields(rest), line: line})
	}
	sc := bufio.NewScanner(bytes.NewReader(dockerfile))
	for sc.Scan() {
		line := sc.Text()
		if t := strings.TrimSpace(line); strings.HasPrefix(t, "#") && logical.Len() == 0 {
			continue
		}
		if strings.HasSuffix(line, "\\") {
			logical.WriteString(strings.TrimSuffix(line, "\\"))
			logical.WriteString(" ")
			continue
		}
		logical.WriteString(line)
		flush()
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("Dockerfile: %w", err)
	}
	flush()
	return out, nil
}

// copySources returns the source operands of every COPY and ADD instruction (excluding multi-stage --from
// copies), in order. It understands flags, the JSON array form and line continuations.
func copySources(dockerfile []byte) ([]string, error) {
	ins, err := instructions(dockerfile)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, in := range ins {
		if in.keyword != "COPY" && in.keyword != "ADD" {
			continue
		}
		var args []string
		fromStage := false
		for _, f := range in.args {
			if len(args) == 0 && strings.HasPrefix(f, "--") {
				fromStage = fromStage || strings.HasPrefix(f, "--from=")
				continue
			}
			args = append(args, f)
		}
		if fromStage {
			continue
		}
		joined := strings.Join(args, " ")
		if strings.HasPrefix(joined, "[") {
			args = nil
			if err := json.Unmarshal([]byte(joined), &args); err != nil {
				return nil, fmt.Errorf("Dockerfile: bad JSON form %q: %w", in.line, err)
			}
		}
		if len(args) < 2 {
			return nil, fmt.Errorf("Dockerfile: %s needs a source and a destination: %q", in.keyword, in.line)
		}
		for _, src := range args[:len(args)-1] {
			out = append(out, strings.TrimPrefix(path.Clean(src), "./"))
		}
	}
	return out, nil
}

// baseImages returns the images FROM lines name, excluding scratch and earlier build stages.
func baseImages(dockerfile []byte) ([]string, error) {
	ins, err := instructions(dockerfile)
	if err != nil {
		return nil, err
	}
	stages := map[string]bool{}
	var out []string
	for _, in := range ins {
		if in.keyword != "FROM" {
			continue
		}
		var args []string
		for _, f := range in.args {
			if !strings.HasPrefix(f, "--") {
				args = append(args, f)
			}
		}
		if len(args) == 0 {
			return nil, fmt.Errorf("Dockerfile: FROM without an image: %q", in.line)
		}
		img := args[0]
		if img != "scratch" && !stages[strings.ToLower(img)] && !slices.Contains(out, img) {
			out = append(out, img)
		}
		if len(args) >= 3 && strings.EqualFold(args[1], "AS") {
			stages[strings.ToLower(args[2])] = true
		}
	}
	return out, nil
}

// dirsTar turns a ".dirs" description (lines "path mode uid gid", # comments) into a tar of empty directories
// with exactly those owners and modes. Timestamps are fixed so the output is reproducible.
func dirsTar(desc []byte) ([]byte, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	sc := bufio.NewScanner(bytes.NewReader(desc))
	n := 0
	for sc.Scan() {
		n++
		line, _, _ := strings.Cut(sc.Text(), "#")
		f := strings.Fields(line)
		if len(f) == 0 {
			continue
		}
		if len(f) != 4 {
			return nil, fmt.Errorf("line %d: want \"path mode uid gid\", got %q", n, sc.Text())
		}
		p := path.Clean(strings.Trim(f[0], "/"))
		if p == "." || strings.HasPrefix(p, "..") {
			return nil, fmt.Errorf("line %d: bad path %q", n, f[0])
		}
		mode, err1 := strconv.ParseInt(f[1], 8, 64)
		uid, err2 := strconv.Atoi(f[2])
		gid, err3 := strconv.Atoi(f[3])
		if err := errors.Join(err1, err2, err3); err != nil {
			return nil, fmt.Errorf("line %d: %w", n, err)
		}
		// Sticky/setgid bits travel in the tar mode's high bits.
		hdr := &tar.Header{
			Typeflag: tar.TypeDir, Name: p + "/", Mode: mode, Uid: uid, Gid: gid,
			ModTime: time.Unix(0, 0), Format: tar.FormatPAX,
		}
		if err := tw.WriteHeader(hdr); err != nil {
			return nil, err
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// writeTar streams the context as a tar archive (the Engine API's build context format).
func (c *buildContext) writeTar(w io.Writer) error {
	tw := tar.NewWriter(w)
	for _, f := range c.files {
		hdr := &tar.Header{
			Typeflag: tar.TypeReg, Name: f.name, Mode: f.mode, Size: int64(len(f.data)),
			ModTime: time.Unix(0, 0), Format: tar.FormatPAX,
		}
		if err := tw.WriteHeader(hdr); err != nil {
			return fmt.Errorf("build context: %w", err)
		}
		if _, err := tw.Write(f.data); err != nil {
			return fmt.Errorf("build context: %w", err)
		}
	}
	if err := tw.Close(); err != nil {
		return fmt.Errorf("build context: %w", err)
	}
	return nil
}
