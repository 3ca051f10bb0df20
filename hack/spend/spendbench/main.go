// Command spendbench measures the spend library's incremental behaviour on a tree: the full scan, a second call on
// the unchanged tree (in-process and after reloading the durable index), and calls after appending 1 MB and 8 MB.
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime/pprof"
	"strings"
	"time"

	"aicli.dev/aicli/internal/spend"
	"aicli.dev/aicli/internal/spend/claude"
	"aicli.dev/aicli/internal/spend/codex"
)

func main() {
	harness := flag.String("harness", "claude", "claude or codex")
	root := flag.String("root", "", "session root (Claude config dir or Codex home)")
	data := flag.String("data", "", "directory for the index")
	profile := flag.String("cpuprofile", "", "write a CPU profile of the unchanged-tree calls here")
	flag.Parse()
	if *profile != "" {
		fh, err := os.Create(*profile)
		if err != nil {
			fmt.Fprintln(os.Stderr, "spendbench:", err)
			os.Exit(1)
		}
		profileTo = fh
	}
	if err := run(spend.Harness(*harness), *root, *data); err != nil {
		fmt.Fprintln(os.Stderr, "spendbench:", err)
		os.Exit(1)
	}
}

func newService(index string) (*spend.Service, error) {
	return spend.NewService(spend.Options{IndexPath: index, Parsers: []spend.SessionParser{claude.Parser{}, codex.Parser{}}})
}

func timed(svc *spend.Service, scopes []spend.Scope) (time.Duration, error) {
	start := time.Now()
	_, err := svc.History(context.Background(), "", scopes)
	return time.Since(start), err
}

// donor returns about n bytes of complete lines taken from the tree's session files, to append elsewhere.
func donor(root string, n int) ([]byte, error) {
	var out []byte
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(p, ".jsonl") || len(out) >= n || strings.Contains(p, "bench-append") {
			return err
		}
		fh, err := os.Open(p)
		if err != nil {
			return err
		}
		defer func() { _ = fh.Close() }()
		r := bufio.NewReaderSize(fh, 1<<20)
		for len(out) < n {
			line, err := r.ReadBytes('\n')
			if err != nil {
				break
			}
			out = append(out, line...)
		}
		return nil
	})
	return out, err
}

func appendBytes(path string, b []byte) error {
	fh, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	if _, err := fh.Write(b); err != nil {
		_ = fh.Close()
		return err
	}
	return fh.Close()
}

func run(h spend.Harness, root, data string) error {
	index := filepath.Join(data, "index.bin")
	scopes := []spend.Scope{{Harness: h, Roots: []string{root}}}
	svc, err := newService(index)
	if err != nil {
		return err
	}
	res := map[string]float64{}
	d, err := timed(svc, scopes)
	if err != nil {
		return err
	}
	res["fullScanMs"] = ms(d)
	if profileTo != nil {
		if err := pprof.StartCPUProfile(profileTo); err != nil {
			return err
		}
		for range 20 {
			if _, err := timed(svc, scopes); err != nil {
				return err
			}
		}
		pprof.StopCPUProfile()
	}
	if d, err = timed(svc, scopes); err != nil {
		return err
	}
	res["secondCallMs"] = ms(d)
	cold, err := newService(index)
	if err != nil {
		return err
	}
	if d, err = timed(cold, scopes); err != nil {
		return err
	}
	res["secondCallReloadedIndexMs"] = ms(d)
	for _, mb := range []int{1, 8} {
		b, err := donor(root, mb<<20)
		if err != nil {
			return err
		}
		target := filepath.Join(root, map[spend.Harness]string{spend.HarnessClaude: "projects/-bench-append/append.jsonl",
			spend.HarnessCodex: "sessions/2025/11/01/rollout-2025-11-01T00-00-00-bench-append.jsonl"}[h])
		if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
			return err
		}
		if _, err := os.Stat(target); err != nil {
			if err := os.WriteFile(target, nil, 0o644); err != nil {
				return err
			}
			if _, err := timed(svc, scopes); err != nil { // register the empty file first
				return err
			}
		}
		if err := appendBytes(target, b); err != nil {
			return err
		}
		if d, err = timed(svc, scopes); err != nil {
			return err
		}
		res[fmt.Sprintf("append%dMBMs", mb)] = ms(d)
		res[fmt.Sprintf("append%dMBBytes", mb)] = float64(len(b))
	}
	return json.NewEncoder(os.Stdout).Encode(res)
}

var profileTo *os.File

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
