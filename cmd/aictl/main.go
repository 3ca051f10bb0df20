// Command aictl controls an aicli supervisor; see docs/aictl.md.
package main

import (
	"os"

	"aicli.dev/aicli/internal/aictl"
)

func main() { os.Exit(aictl.Main()) }
