// Package pricing implements the spend ModelPricingSource chain: a live models list fetched over HTTP, the last good
// table cached durably in the data dir, and a bundled static table.
package pricing
