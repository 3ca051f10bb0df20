package admission

import (
	"context"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"aicli.dev/aicli/internal/apiserver"
)

func TestMonitorAttachmentTriggerMustBeUsable(t *testing.T) {
	for _, tc := range []struct {
		name, keywords string
		want           []string
	}{
		{"valid", `[{text: panic}, {text: deadlock, mode: Word}]`, nil},
		{"no keywords", `[]`, []string{`spec.trigger.keywords: Required value`}},
		{"empty keyword", `[{text: panic}, {text: ""}]`, []string{`spec.trigger.keywords[1].text: Required value`}},
		{"whitespace-only keyword", `[{text: panic}, {text: " \t"}]`, []string{`spec.trigger.keywords[1].text: Invalid value`}},
		{"unknown mode", `[{text: panic, mode: Regex}]`, []string{`spec.trigger.keywords[0].mode: Unsupported value`}},
		{"duplicate after folding", `[{text: panic}, {text: PANIC}]`, []string{`spec.trigger.keywords[1]: Duplicate value`}},
		{"every error named", `[{text: " "}, {text: ""}]`,
			[]string{`spec.trigger.keywords[0].text: Invalid value`, `spec.trigger.keywords[1].text: Required value`}},
	} {
		for _, op := range []apiserver.Operation{apiserver.OpCreate, apiserver.OpUpdate} {
			t.Run(tc.name+"/"+string(op), func(t *testing.T) {
				doc := "apiVersion: aicli.dev/v1alpha1\nkind: MonitorAttachment\nmetadata: {name: m, namespace: default}\n" +
					"spec: {monitor: watcher, target: {agent: worker}, trigger: {keywords: " + tc.keywords + "}}\n"
				obj := &unstructured.Unstructured{}
				if err := yaml.Unmarshal([]byte(doc), &obj.Object); err != nil {
					t.Fatal(err)
				}
				err := (&MonitorAttachments{}).Admit(context.Background(), op, obj.DeepCopy(), obj)
				if tc.want == nil {
					if err != nil {
						t.Fatalf("refused: %v", err)
					}
					return
				}
				if !apierrors.IsInvalid(err) {
					t.Fatalf("err %v, want Invalid", err)
				}
				for _, w := range tc.want {
					if !strings.Contains(err.Error(), w) {
						t.Fatalf("err %q does not name %q", err, w)
					}
				}
			})
		}
	}
}
