package aictl

import (
	"net/http"
	"strings"
	"testing"
)

// TestInfoShowsTheSupervisorsCapacity checks `aictl info` reads the info
// endpoint and prints identity, capacity and the containers, or the reply
// as JSON; a refusal is a readable error.
func TestInfoShowsTheSupervisorsCapacity(t *testing.T) {
	refuse := false
	server := fakeEndpoint(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		if r.URL.Path != "/apis/aicli.dev/v1alpha1/info" {
			http.NotFound(w, r)
			return
		}
		if refuse {
			w.WriteHeader(http.StatusUnauthorized)
			_, _ = w.Write([]byte(`{"kind":"Status","apiVersion":"v1","status":"Failure","message":"a bearer token is required","reason":"Unauthorized","code":401}`))
			return
		}
		_, _ = w.Write([]byte(`{"supervisorID":"sup-1","version":"devel+abc","startTime":"2026-12-06T01:00:00Z","uptimeSeconds":3720,"ready":true,
			"capacity":{"liveConversations":1,"cpuPercent":2.5,"memoryBytes":41943040,"sampledAt":"2026-12-06T02:02:00Z",
			"containers":[{"name":"c1","namespace":"default","agent":"coder","conversation":"coder-x7k2p","cpuPercent":2.5,"memoryBytes":41943040}],
			"disk":{"homesBytes":1048576,"imagesBytes":52428800,"measuredAt":"2026-12-06T02:02:00Z","images":[]}}}`))
	})
	run := func(args ...string) result { return aictl(t, server, args...) }
	r := run("info")
	for _, want := range []string{"sup-1", "devel+abc", "up 1h2m0s", "Live conversations:   1", "CPU 2.5%, memory 40.0 MiB",
		"homes 1.0 MiB, guest images 50.0 MiB", "coder-x7k2p"} {
		if r.code != 0 || !strings.Contains(r.out, want) {
			t.Fatalf("info lacks %q: %+v", want, r)
		}
	}
	if r = run("info", "-o", "json"); r.code != 0 || !strings.Contains(r.out, `"liveConversations": 1`) {
		t.Fatalf("info -o json: %+v", r)
	}
	refuse = true
	if r = run("info"); r.code == 0 || !strings.Contains(r.err, "a bearer token is required") {
		t.Fatalf("refused info: %+v", r)
	}
}
