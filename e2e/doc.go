// Package e2e is the Ginkgo end-to-end suite against the real Docker engine. Its specs carry the build tag e2e:
// run them with `go test -tags e2e ./e2e/...` (hack/ensure-docker.sh starts the engine first).
package e2e
