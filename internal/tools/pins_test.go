package tools_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"aicli.dev/aicli/apis/v1alpha1"
	"aicli.dev/aicli/guest/toolwire"
	"aicli.dev/aicli/internal/grants"
	"aicli.dev/aicli/internal/tools"
)

var discardLog = slog.New(slog.DiscardHandler)

// pinAuth authorises like the authority package does: the caller's arguments become tools.BackendArgs of the
// tool's pins and declared parameters.
type pinAuth struct {
	*fakeAuth
	pins     map[string]string
	declared []string
}

func (p pinAuth) Authorize(ctx context.Context, c tools.Caller, r toolwire.Request) (*tools.Authorization, error) {
	a, err := p.fakeAuth.Authorize(ctx, c, r)
	if err != nil {
		return nil, err
	}
	if a.Args, err = tools.BackendArgs(r.Args, p.pins, p.declared); err != nil {
		return nil, err
	}
	return a, nil
}

// flagProbe uses Go's flag package (last value wins).
const flagProbe = `package main

import (
	"flag"
	"fmt"
)

func main() {
	repo := flag.String("repo", "", "repository")
	out := flag.String("out", "", "output")
	flag.Parse()
	fmt.Printf("repo=%s\nout=%s\n", *repo, *out)
	for _, a := range flag.Args() {
		fmt.Printf("operand=%s\n", a)
	}
}
`

// getoptProbe uses util-linux getopt (getopt_long: long options, abbreviations accepted); the first --repo wins.
const getoptProbe = `#!/bin/sh
opts=$(getopt -n probe -o '' --longoptions repo:,out: -- "$@") || exit 2
eval "set -- $opts"
repo= out=
while [ "$1" != -- ]; do
	case "$1" in
	--repo) [ -n "$repo" ] || repo=$2; shift 2 ;;
	--out) out=$2; shift 2 ;;
	esac
done
shift
printf 'repo=%s\nout=%s\n' "$repo" "$out"
for a; do printf 'operand=%s\n' "$a"; done
`

// argvProbe prints its argv, one argument a line.
const argvProbe = `#!/bin/sh
for a; do printf 'arg=%s\n' "$a"; done
`

// buildProbes writes the three backends into a temporary directory.
func buildProbes(t *testing.T) (goflag, getopt, argv string) {
	t.Helper()
	if _, err := exec.LookPath("getopt"); err != nil {
		t.Fatal("getopt (Debian's util-linux) is not installed")
	}
	dir := t.TempDir()
	write := func(name, text string, mode os.FileMode) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), mode); err != nil {
			t.Fatal(err)
		}
		return p
	}
	write("go.mod", "module probe\n\ngo 1.22\n", 0o644)
	write("main.go", flagProbe, 0o644)
	goflag = filepath.Join(dir, "goflag")
	cmd := exec.Command("go", "build", "-o", goflag, ".")
	cmd.Dir, cmd.Env = dir, append(os.Environ(), "CGO_ENABLED=0", "GOWORK=off", "GOFLAGS=")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("build the flag probe: %v\n%s", err, out)
	}
	return goflag, write("getopt.sh", getoptProbe, 0o755), write("argv.sh", argvProbe, 0o755)
}

// TestPinsHoldAgainstRealOptionParsers runs each attack through the exec backend path into three real programs: a
// Go flag program, a getopt_long script and a plain argv printer. Each call is either refused (param_mismatch, the
// program never runs) or the program sees the pinned repo and no caller's option before `--`.
func TestPinsHoldAgainstRealOptionParsers(t *testing.T) {
	goflag, getopt, argv := buildProbes(t)
	const pinned = "team/allowed"
	auth := pinAuth{fakeAuth: &fakeAuth{tools: map[string]*tools.Authorization{
		"goflag": execTool("goflag", goflag),
		"getopt": execTool("getopt", getopt),
		"argv":   execTool("argv", argv),
	}}, pins: map[string]string{"repo": pinned}}
	s, _ := newServer(t, auth.fakeAuth, func(o *tools.Options) { o.Authorizer, o.Logger = auth, discardLog })
	attacks := []struct {
		args    []string
		refused bool
	}{
		{[]string{"-repo=evil/other", "-out"}, true},
		{[]string{"--rep=evil", "--out"}, true},
		{[]string{"--rep=evil"}, true},
		{[]string{"--r=evil"}, true},
		{[]string{"--repo", "evil"}, true},
		{[]string{"--repo=evil"}, true},
		{[]string{"---repo=evil"}, true},
		{[]string{"-repo", "evil"}, true},
		{[]string{"--REPO=evil"}, true},
		{[]string{"--out=x", "--repo"}, true},
		{[]string{"--out"}, true},
		{[]string{"-"}, true},
		{[]string{"--out=-repo=evil"}, false},
		{[]string{"--repo=" + pinned, "x"}, false},
		{[]string{"x", "--", "-repo=evil", "--repo=evil", "-out"}, false},
		{[]string{"—repo=evil", "−repo=evil"}, false},
	}
	for _, tool := range []string{"goflag", "getopt", "argv"} {
		for _, at := range attacks {
			r := call(t, s, tool, "", at.args...)
			if at.refused {
				if r.exit.Code != toolwire.ExitRefused || r.exit.Refused != "param_mismatch" || r.stdout != "" {
					t.Errorf("%s %q: not refused: exit %+v, stdout %q", tool, at.args, r.exit, r.stdout)
				}
				continue
			}
			if r.exit.Code != 0 {
				t.Errorf("%s %q: exit %+v, stderr %q", tool, at.args, r.exit, r.stderr)
				continue
			}
			t.Logf("%s %q:\n%s", tool, at.args, r.stdout)
			lines := strings.Split(strings.TrimSuffix(r.stdout, "\n"), "\n")
			if tool != "argv" {
				if lines[0] != "repo="+pinned {
					t.Errorf("%s %q: the backend saw %q", tool, at.args, r.stdout)
				}
				continue
			}
			// The argv printer: before `--` only --k=v parameters, the pin last, and nothing of the caller's repo.
			end := slices.Index(lines, "arg=--")
			if end < 1 || lines[end-1] != "arg=--repo="+pinned {
				t.Errorf("argv %q: the backend saw %q", at.args, r.stdout)
				continue
			}
			for _, l := range lines[:end-1] {
				k, _, isParam := strings.Cut(strings.TrimPrefix(l, "arg=--"), "=")
				if !strings.HasPrefix(l, "arg=--") || !isParam || strings.HasPrefix("repo", k) || strings.HasPrefix(k, "-") {
					t.Errorf("argv %q: option %q before --", at.args, l)
				}
			}
		}
	}
}

// TestHTTPBackendGetsCanonicalArgs: an http backend's JSON args are the same canonical list.
func TestHTTPBackendGetsCanonicalArgs(t *testing.T) {
	var body struct{ Args []string }
	srv := httptest.NewServer(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
		_ = json.NewDecoder(r.Body).Decode(&body)
	}))
	defer srv.Close()
	web := &tools.Authorization{Tool: grants.ResolvedTool{Name: "web",
		Backend: v1alpha1.ToolBackend{HTTP: &v1alpha1.HTTPBackend{URL: srv.URL}}}}
	auth := pinAuth{fakeAuth: &fakeAuth{tools: map[string]*tools.Authorization{"web": web}},
		pins: map[string]string{"repo": "team/allowed"}}
	s, _ := newServer(t, auth.fakeAuth, func(o *tools.Options) { o.Authorizer, o.Logger = auth, discardLog })
	if r := call(t, s, "web", "", "a", "--q=1", "b"); r.exit.Code != 0 {
		t.Fatalf("%+v", r)
	}
	if want := []string{"--q=1", "--repo=team/allowed", "--", "a", "b"}; !reflect.DeepEqual(body.Args, want) {
		t.Fatalf("args %q, want %q", body.Args, want)
	}
	if r := call(t, s, "web", "", "-repo=evil", "-q"); r.exit.Refused != "param_mismatch" {
		t.Fatalf("%+v", r)
	}
}
