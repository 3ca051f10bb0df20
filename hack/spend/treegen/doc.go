// Package treegen writes synthetic but realistic Claude Code and Codex session trees (large tool results, streaming
// duplicates, resumed-session copies, sidechains, re-emitted token counts, forks, archives) for the ccusage
// comparison and the spend benchmark.
package treegen
