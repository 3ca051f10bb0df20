// Command gentree writes synthetic Claude Code and Codex session trees for the spend benchmark and comparisons.
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"

	"aicli.dev/aicli/hack/spend/treegen"
)

func main() {
	out := flag.String("out", "", "output directory (gets claude/ and codex/)")
	mb := flag.Int64("mb", 1024, "approximate megabytes per harness")
	seed := flag.Uint64("seed", 1, "random seed")
	harness := flag.String("harness", "both", "claude, codex or both")
	flag.Parse()
	if *out == "" {
		fmt.Fprintln(os.Stderr, "gentree: -out is required")
		os.Exit(2)
	}
	o := treegen.Options{Seed: *seed, Bytes: *mb << 20}
	if *harness != "codex" {
		n, err := treegen.Claude(filepath.Join(*out, "claude"), o)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		fmt.Printf("claude: %d bytes\n", n)
	}
	if *harness != "claude" {
		n, err := treegen.Codex(filepath.Join(*out, "codex"), o)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		fmt.Printf("codex: %d bytes\n", n)
	}
}
