package admission_test

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"aicli.dev/aicli/internal/apischema"
	"aicli.dev/aicli/internal/apiserver"
	"aicli.dev/aicli/internal/apiserver/apiservertest"
)

// TestAgentWithBadSelectorIsRefusedByTheAPI: the API server runs the agent admitter.
func TestAgentWithBadSelectorIsRefusedByTheAPI(t *testing.T) {
	srv := apiservertest.New(t)
	url := srv.ServeLoopback(t, &apiserver.Principal{Name: "owner"})
	body := `{"apiVersion":"aicli.dev/v1alpha1","kind":"Agent","metadata":{"name":"a"},"spec":{"harness":"fake",` +
		`"peers":{"sendTo":{"selector":{"matchExpressions":[{"key":"team","operator":"Near","values":["x"]}]}}}}}`
	resp, err := http.Post(url+apischema.APIPath+"/namespaces/default/agents", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusUnprocessableEntity || !strings.Contains(string(data), "spec.peers.sendTo.selector") {
		t.Fatalf("%d %s", resp.StatusCode, data)
	}
}
