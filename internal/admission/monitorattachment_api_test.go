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

// TestMonitorAttachmentWithBlankKeywordIsRefusedByTheAPI: the API server runs
// the attachment admitter on create and on update, and the 422 names the field.
func TestMonitorAttachmentWithBlankKeywordIsRefusedByTheAPI(t *testing.T) {
	srv := apiservertest.New(t)
	url := srv.ServeLoopback(t, &apiserver.Principal{Name: "owner"}) + apischema.APIPath + "/namespaces/default/monitorattachments"
	attachment := func(keywords string) string {
		return `{"apiVersion":"aicli.dev/v1alpha1","kind":"MonitorAttachment","metadata":{"name":"m"},` +
			`"spec":{"monitor":"watcher","target":{"agent":"worker"},"trigger":{"keywords":` + keywords + `}}}`
	}
	do := func(method, url, contentType, body string) (int, string) {
		t.Helper()
		req, err := http.NewRequest(method, url, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", contentType)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		data, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(data)
	}
	blank := `[{"text":"panic"},{"text":"  "}]`
	if code, body := do(http.MethodPost, url, "application/json", attachment(blank)); code != http.StatusUnprocessableEntity ||
		!strings.Contains(body, "spec.trigger.keywords[1].text") || !strings.Contains(body, "whitespace only") {
		t.Fatalf("create with a blank keyword: %d %s", code, body)
	}
	if code, body := do(http.MethodPost, url, "application/json", attachment(`[{"text":"panic"}]`)); code != http.StatusCreated {
		t.Fatalf("create: %d %s", code, body)
	}
	if code, body := do(http.MethodPatch, url+"/m", "application/merge-patch+json",
		`{"spec":{"trigger":{"keywords":`+blank+`}}}`); code != http.StatusUnprocessableEntity ||
		!strings.Contains(body, "spec.trigger.keywords[1].text") {
		t.Fatalf("update to a blank keyword: %d %s", code, body)
	}
	if code, body := do(http.MethodPatch, url+"/m", "application/merge-patch+json",
		`{"spec":{"trigger":{"keywords":[{"text":"panic"},{"text":"Panic"}]}}}`); code != http.StatusUnprocessableEntity ||
		!strings.Contains(body, "spec.trigger.keywords[1]: Duplicate value") {
		t.Fatalf("update to a duplicate keyword: %d %s", code, body)
	}
}
