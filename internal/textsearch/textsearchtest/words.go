// Package textsearchtest holds the vocabulary the full-text index benchmarks
// (recall, history) draw their documents from.
package textsearchtest

import "strings"

// Words is a small vocabulary of the project's own terms; benchmarks draw
// from it with a skewed distribution so terms have realistic, uneven
// document frequencies.
var Words = strings.Fields(`agent container supervisor transcript mailbox recall bucket search index
store commit durable snapshot conversation harness provider budget grant capability token egress
gateway image build runtime docker network volume secret lease breaker backoff retry deadline
reconcile status condition event watch history cursor offset query phrase stemming ranking
running deployed failed migrated compiled tested reviewed merged released rolled approved denied
memory disk cpu latency throughput queue worker batch stream socket timeout error warning`)
