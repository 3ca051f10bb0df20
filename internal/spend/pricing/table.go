package pricing

import (
	"regexp"
	"strings"

	"aicli.dev/aicli/internal/spend"
)

// Table maps normalised model slugs (e.g. "anthropic/claude-sonnet-4.5") to rates in USD per token.
type Table map[string]spend.Rates

var (
	claudeDate    = regexp.MustCompile(`-\d{8}$`)
	claudeFamilyV = regexp.MustCompile(`^claude-(opus|sonnet|haiku)-(\d+)-(\d+)$`)
	claudeLegacyV = regexp.MustCompile(`^claude-(\d+)-(\d+)-(opus|sonnet|haiku)$`)
	openAIReason  = regexp.MustCompile(`^o\d`)
)

// Normalize maps a raw model id from a session file to its pricing slug: Claude ids lose the date, "[1m]" and
// "-fast" suffixes and get a dotted version under "anthropic/"; OpenAI ids get "openai/". Ids that already carry a
// provider prefix are kept.
func Normalize(raw string) string {
	m := strings.ToLower(strings.TrimSpace(raw))
	if strings.Contains(m, "/") {
		return m
	}
	if strings.HasPrefix(m, "claude-") {
		m = strings.TrimSuffix(m, "[1m]")
		m = claudeDate.ReplaceAllString(m, "")
		m = strings.TrimSuffix(m, "-fast")
		m = claudeDate.ReplaceAllString(m, "")
		if s := claudeFamilyV.FindStringSubmatch(m); s != nil {
			m = "claude-" + s[1] + "-" + s[2] + "." + s[3]
		} else if s := claudeLegacyV.FindStringSubmatch(m); s != nil {
			m = "claude-" + s[1] + "." + s[2] + "-" + s[3]
		}
		return "anthropic/" + m
	}
	if strings.HasPrefix(m, "gpt-") || strings.HasPrefix(m, "codex-") || openAIReason.MatchString(m) {
		return "openai/" + m
	}
	return m
}

func perMillion(in, w5, w1, read, out float64) spend.Rates {
	return spend.Rates{Input: in / 1e6, CacheWrite5m: w5 / 1e6, CacheWrite1h: w1 / 1e6, CacheRead: read / 1e6, Output: out / 1e6}
}

// Bundled returns the static fallback table (USD per million tokens in the source, per token here).
func Bundled() Table {
	t := Table{}
	for _, v := range []string{"4.5", "4.6", "4.7"} {
		t["anthropic/claude-opus-"+v] = perMillion(5, 6.25, 10, 0.50, 25)
	}
	for _, v := range []string{"4", "4.1"} {
		t["anthropic/claude-opus-"+v] = perMillion(15, 18.75, 30, 1.50, 75)
	}
	for _, v := range []string{"4", "4.5"} {
		r := perMillion(3, 3.75, 6, 0.30, 15)
		long := perMillion(6, 7.5, 12, 0.60, 22.5)
		r.Long = &long
		t["anthropic/claude-sonnet-"+v] = r
	}
	t["anthropic/claude-haiku-4.5"] = perMillion(1, 1.25, 2, 0.10, 5)
	for _, m := range []string{"gpt-5", "gpt-5-codex", "gpt-5.1-codex", "gpt-5.1-codex-max"} {
		t["openai/"+m] = perMillion(1.25, 0, 0, 0.125, 10)
	}
	t["openai/gpt-5-mini"] = perMillion(0.25, 0, 0, 0.025, 2)
	for _, m := range []string{"gpt-5.2", "gpt-5.2-codex"} {
		t["openai/"+m] = perMillion(1.75, 0, 0, 0.175, 14)
	}
	return t
}
