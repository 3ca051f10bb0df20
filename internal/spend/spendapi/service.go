package spendapi

import (
	"path/filepath"

	"aicli.dev/aicli/internal/spend"
	"aicli.dev/aicli/internal/spend/claude"
	"aicli.dev/aicli/internal/spend/codex"
	"aicli.dev/aicli/internal/spend/pricing"
)

// Config assembles a Service.
type Config struct {
	// DataDir holds the durable index (<DataDir>/spend/index.bin) and pricing cache (<DataDir>/spend/pricing.json).
	DataDir string
	// PricingURL overrides the models-list endpoint.
	PricingURL string
	// Offline forbids live pricing fetches.
	Offline bool
	// PricingFile, when set, prices from this models-list file instead of the chain.
	PricingFile string
}

// NewService builds a spend.Service with the Claude and Codex parsers and the pricing chain.
func NewService(cfg Config) (*spend.Service, error) {
	dir := filepath.Join(cfg.DataDir, "spend")
	var src spend.ModelPricingSource = &pricing.Chain{URL: cfg.PricingURL, Offline: cfg.Offline,
		CachePath: filepath.Join(dir, "pricing.json")}
	if cfg.PricingFile != "" {
		src = pricing.FileSource{Path: cfg.PricingFile}
	}
	return spend.NewService(spend.Options{
		IndexPath: filepath.Join(dir, "index.bin"),
		Parsers:   []spend.SessionParser{claude.Parser{}, codex.Parser{}},
		Pricing:   src,
	})
}
