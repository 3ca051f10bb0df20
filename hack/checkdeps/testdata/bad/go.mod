// A module that breaks every import boundary checkdeps enforces, for its
// tests. The third-party modules are local stand-ins: no network needed.
module example.com/bad

go 1.26

require (
	github.com/cockroachdb/pebble/v2 v2.0.0
	github.com/prometheus/client_golang v1.0.0
	k8s.io/apimachinery v0.0.0
	sigs.k8s.io/controller-runtime v0.0.0
)

replace (
	github.com/cockroachdb/pebble/v2 => ./third_party/pebble
	github.com/prometheus/client_golang => ./third_party/prometheus
	k8s.io/apimachinery => ./third_party/apimachinery
	sigs.k8s.io/controller-runtime => ./third_party/controller-runtime
)
