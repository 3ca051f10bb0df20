// Package spend is the harness-neutral core of spend accounting: it turns the AI CLIs' native session files into
// daily UTC token and dollar totals per model and per agent, through per-harness SessionParsers, an incremental
// durable index and a ModelPricingSource.
package spend
