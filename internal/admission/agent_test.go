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

func TestAgentPeerSelectorsMustParse(t *testing.T) {
	for _, tc := range []struct {
		name, peers, want string
	}{
		{"no peers", ``, ""},
		{"valid selector", `{sendTo: {selector: {matchLabels: {team: a}}}}`, ""},
		{"bad sendTo operator", `{sendTo: {selector: {matchExpressions: [{key: team, operator: Near, values: [a]}]}}}`,
			`spec.peers.sendTo.selector: Invalid value`},
		{"bad receiveFrom label", `{receiveFrom: {selector: {matchLabels: {"bad key!": a}}}}`, `spec.peers.receiveFrom.selector`},
		{"In without values", `{receiveFrom: {selector: {matchExpressions: [{key: team, operator: In}]}}}`, `spec.peers.receiveFrom.selector`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			doc := "apiVersion: aicli.dev/v1alpha1\nkind: Agent\nmetadata: {name: a, namespace: default}\nspec:\n  harness: fake\n"
			if tc.peers != "" {
				doc += "  peers: " + tc.peers + "\n"
			}
			obj := &unstructured.Unstructured{}
			if err := yaml.Unmarshal([]byte(doc), &obj.Object); err != nil {
				t.Fatal(err)
			}
			err := (&Agents{}).Admit(context.Background(), apiserver.OpCreate, nil, obj)
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case tc.want != "" && (!apierrors.IsInvalid(err) || !strings.Contains(err.Error(), tc.want)):
				t.Fatalf("err %v, want Invalid naming %q", err, tc.want)
			}
		})
	}
}
