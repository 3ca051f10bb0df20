package convapi_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// wantStatus checks that a reply is a Status with code whose message contains every want.
func wantStatus(t *testing.T, code int, body []byte, wantCode int, want ...string) metav1.Status {
	t.Helper()
	if code != wantCode {
		t.Fatalf("HTTP %d, want %d: %s", code, wantCode, body)
	}
	var st metav1.Status
	if err := json.Unmarshal(body, &st); err != nil || st.Kind != "Status" {
		t.Fatalf("reply is not a Status (%v): %s", err, body)
	}
	if int(st.Code) != wantCode {
		t.Fatalf("Status.code %d, want %d: %s", st.Code, wantCode, body)
	}
	for _, w := range want {
		if !strings.Contains(st.Message, w) {
			t.Errorf("Status message %q does not contain %q", st.Message, w)
		}
	}
	return st
}

func decodeObject(t *testing.T, body []byte) *unstructured.Unstructured {
	t.Helper()
	obj := &unstructured.Unstructured{}
	if err := obj.UnmarshalJSON(body); err != nil {
		t.Fatalf("decoding %s: %v", body, err)
	}
	return obj
}

// eventually polls cond every 5ms until it holds or 10s pass.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting until %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
