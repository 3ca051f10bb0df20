package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"go/parser"
	"go/token"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
)

func main() { os.Exit(run(os.Args[1:], os.Stdout, os.Stderr)) }

// run checks the module in -C (default: the current directory) and returns
// the exit code: 0 clean, 1 violations, 2 unable to check.
func run(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("checkdeps", flag.ContinueOnError)
	fs.SetOutput(stderr)
	dir := fs.String("C", ".", "the module directory to check")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "checkdeps: unexpected arguments %q: the rules are built in (hack/checkdeps/rules.go)\n", fs.Args())
		return 2
	}
	violations, err := check(*dir)
	if err != nil {
		fmt.Fprintf(stderr, "checkdeps: %v\n", err)
		return 2
	}
	if len(violations) > 0 {
		for _, v := range violations {
			fmt.Fprintf(stderr, "checkdeps: %s\n", v)
		}
		return 1
	}
	fmt.Fprintln(stdout, "checkdeps: import boundaries hold")
	return 0
}

// check applies every rule to the module in dir and returns the violations.
func check(dir string) ([]string, error) {
	dir, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	out, err := goCmd(dir, "list", "-m")
	if err != nil {
		return nil, err
	}
	module := strings.TrimSpace(string(out))
	var violations []string
	for _, r := range linkRules {
		v, err := checkLinks(dir, module, r)
		if err != nil {
			return nil, err
		}
		violations = append(violations, v...)
	}
	for _, r := range importRules {
		v, err := checkImports(dir, module, r)
		if err != nil {
			return nil, err
		}
		violations = append(violations, v...)
	}
	return violations, nil
}

// listedPackage is the part of `go list -json` the rules read.
type listedPackage struct {
	ImportPath   string
	Dir          string
	Standard     bool
	Imports      []string
	GoFiles      []string
	CgoFiles     []string
	TestGoFiles  []string
	XTestGoFiles []string
}

func goList(dir string, args ...string) ([]listedPackage, error) {
	out, err := goCmd(dir, append([]string{"list",
		"-json=ImportPath,Dir,Standard,Imports,GoFiles,CgoFiles,TestGoFiles,XTestGoFiles"}, args...)...)
	if err != nil {
		return nil, err
	}
	var pkgs []listedPackage
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var p listedPackage
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			return pkgs, nil
		} else if err != nil {
			return nil, fmt.Errorf("go list %s: decoding its output: %w", strings.Join(args, " "), err)
		}
		pkgs = append(pkgs, p)
	}
}

func goCmd(dir string, args ...string) ([]byte, error) {
	cmd := exec.Command("go", args...)
	cmd.Dir = dir
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("go %s in %s: %v: %s", strings.Join(args, " "), dir, err, strings.TrimSpace(stderr.String()))
	}
	return out, nil
}

// matches reports whether path is prefix or one of its sub-packages.
func matches(path, prefix string) bool {
	return path == prefix || strings.HasPrefix(path, prefix+"/")
}

// checkLinks reports every forbidden package the binary links, with the
// shortest import chain that pulls it in. A forbidden package reached only
// through another forbidden one is not repeated: fixing the first fixes both.
func checkLinks(dir, module string, r linkRule) ([]string, error) {
	pkgs, err := goList(dir, "-deps", r.Binary)
	if err != nil {
		return nil, err
	}
	if len(pkgs) == 0 {
		return nil, fmt.Errorf("go list -deps %s listed nothing", r.Binary)
	}
	imports := map[string][]string{}
	for _, p := range pkgs {
		imports[p.ImportPath] = p.Imports
	}
	root := pkgs[len(pkgs)-1].ImportPath // -deps lists the named package last
	why := func(path string) (string, bool) {
		for _, f := range r.Forbidden {
			if matches(path, strings.ReplaceAll(f.Path, "{module}", module)) {
				return f.Why, true
			}
		}
		return "", false
	}
	// Breadth-first from the binary, not walking past a forbidden package.
	parent := map[string]string{root: ""}
	queue := []string{root}
	var violations []string
	for len(queue) > 0 {
		cur := queue[0]
		queue = queue[1:]
		if w, bad := why(cur); bad {
			violations = append(violations, fmt.Sprintf("%s links %s (%s): %s", r.Binary, cur, w, chain(parent, cur)))
			continue
		}
		for _, next := range imports[cur] {
			if _, seen := parent[next]; !seen {
				parent[next] = cur
				queue = append(queue, next)
			}
		}
	}
	return violations, nil
}

func chain(parent map[string]string, leaf string) string {
	var links []string
	for p := leaf; p != ""; p = parent[p] {
		links = append([]string{p}, links...)
	}
	return strings.Join(links, " → ")
}

// checkImports reports each import of a matching package, test files
// included, that is neither the standard library nor allowed, by file and line.
func checkImports(dir, module string, r importRule) ([]string, error) {
	pkgs, err := goList(dir, r.Packages)
	if err != nil {
		return nil, err
	}
	allowed := func(path string) bool {
		if isStandard(path) {
			return true
		}
		for _, a := range r.Allowed {
			if matches(path, strings.ReplaceAll(a, "{module}", module)) {
				return true
			}
		}
		return false
	}
	var violations []string
	fset := token.NewFileSet()
	for _, p := range pkgs {
		files := append(append(append(append([]string{}, p.GoFiles...), p.CgoFiles...), p.TestGoFiles...), p.XTestGoFiles...)
		for _, name := range files {
			f, err := parser.ParseFile(fset, filepath.Join(p.Dir, name), nil, parser.ImportsOnly)
			if err != nil {
				return nil, err
			}
			for _, spec := range f.Imports {
				path, err := strconv.Unquote(spec.Path.Value)
				if err != nil || allowed(path) {
					continue
				}
				pos := fset.Position(spec.Pos())
				rel, relErr := filepath.Rel(dir, pos.Filename)
				if relErr != nil {
					rel = pos.Filename
				}
				violations = append(violations, fmt.Sprintf("%s:%d: %s imports %s: %s",
					filepath.ToSlash(rel), pos.Line, p.ImportPath, path, r.Why))
			}
		}
	}
	return violations, nil
}

// isStandard reports whether path is in the standard library: its first
// element has no dot (the go command's own rule for module paths).
func isStandard(path string) bool {
	first, _, _ := strings.Cut(path, "/")
	return !strings.Contains(first, ".")
}
