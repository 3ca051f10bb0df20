package apischema

import (
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// FuzzDecode feeds arbitrary bodies through decode, validation and defaulting:
// it must never panic, and every rejection must be a 4xx Status.
func FuzzDecode(f *testing.F) {
	seeds := []string{
		`{"apiVersion":"aicli.dev/v1alpha1","kind":"Agent","metadata":{"name":"a"},"spec":{"harness":"fake"}}`,
		`{"apiVersion":"aicli.dev/v1alpha1","kind":"Agent","metadata":{"name":"a","labels":{"x":"y"}},"spec":{"harness":"claude","env":[{"name":"A","value":"b"}],"peers":{"sendTo":{"all":true}},"egress":{"allow":["*.example.com"]}}}`,
		`{"apiVersion":"aicli.dev/v1alpha1","kind":"Conversation","metadata":{"generateName":"c-"},"spec":{"agentRef":"a"}}`,
		`{"apiVersion":"aicli.dev/v1alpha1","kind":"Grant","metadata":{"name":"g"},"spec":{"subject":"a","tools":[{"name":"t","backend":{"exec":{"command":"/bin/true"}}}]}}`,
		`{"apiVersion":"aicli.dev/v1alpha1","kind":"MonitorAttachment","metadata":{"name":"m"},"spec":{"monitor":"a","target":{"agent":"b"},"trigger":{"keywords":[{"text":"stuck"}]}}}`,
		`{"spec":{"harness":["fake"]}}`, `[]`, `null`, `{"metadata":{"name":1}}`, "\x00\xff", `{"a":` + "1e999" + `}`,
	}
	for _, s := range seeds {
		f.Add(s)
	}
	reg := Default()
	f.Fuzz(func(t *testing.T, body string) {
		for _, res := range reg.Resources() {
			_, err := reg.Decode(res, "default", []byte(body))
			if err == nil {
				continue
			}
			status, ok := err.(apierrors.APIStatus)
			if !ok {
				t.Fatalf("%s: error is not a Status: %T %v", res.Kind, err, err)
			}
			if code := status.Status().Code; code < 400 || code >= 500 {
				t.Fatalf("%s: code %d for %q: %v", res.Kind, code, body, err)
			}
		}
	})
}
