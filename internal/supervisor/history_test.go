package supervisor

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"aicli.dev/aicli/apis/v1alpha1"
	"aicli.dev/aicli/internal/apiserver"
	"aicli.dev/aicli/internal/history"
	"aicli.dev/aicli/internal/layout"
	"aicli.dev/aicli/internal/store"
	"aicli.dev/aicli/internal/transcript"
	"aicli.dev/aicli/internal/transcript/transcriptwire"
)

// TestHistoryIndexesCommittedTranscripts wires the history index as Run does
// and checks that a committed entry of a stored conversation is found under
// its agent and conversation names.
func TestHistoryIndexesCommittedTranscripts(t *testing.T) {
	ctx := context.Background()
	dir := layout.Dir(t.TempDir())
	st, err := store.Open(dir.Store(), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	api := apiserver.New(apiserver.Options{Store: st, Logger: slog.New(slog.DiscardHandler)})
	transcripts := &transcript.StoreLog{Store: st}
	ix, err := startHistory(ctx, dir, st, transcripts, api, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	defer ix.Close()
	if _, err := os.Stat(filepath.Join(dir.History())); err != nil {
		t.Fatalf("index dir: %v", err)
	}

	conv := &v1alpha1.Conversation{
		TypeMeta:   metav1.TypeMeta{APIVersion: v1alpha1.GroupVersion.String(), Kind: "Conversation"},
		ObjectMeta: metav1.ObjectMeta{Name: "coder-1", Namespace: "team"},
		Spec:       v1alpha1.ConversationSpec{AgentRef: "coder"},
	}
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(conv)
	if err != nil {
		t.Fatal(err)
	}
	created, err := st.Create(ctx, "conversations", &unstructured.Unstructured{Object: m})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := transcripts.Append(ctx, string(created.GetUID()),
		[]transcriptwire.Entry{{Speaker: "human", Text: "rotate the signing keys"}}); err != nil {
		t.Fatal(err)
	}
	if err := ix.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	hits, err := ix.Search(ctx, history.Query{Namespace: "team", Targets: []v1alpha1.TargetRef{{Agent: "coder"}}, Text: "keys"})
	if err != nil || len(hits) != 1 || hits[0].Conversation != "coder-1" || hits[0].Cursor != 1 {
		t.Fatalf("search: %+v, %v", hits, err)
	}
}
