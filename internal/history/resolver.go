package history

import (
	"context"
	"fmt"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
)

// ConversationLister lists stored objects; *store.Store implements it.
type ConversationLister interface {
	List(ctx context.Context, resource, namespace string, sel labels.Selector) (*unstructured.UnstructuredList, error)
}

// relistAfter is how long a uid that a fresh list did not find is answered
// "unknown" without listing again.
const relistAfter = 10 * time.Second

// StoreResolver resolves uids from the store's Conversation objects
// (metadata.uid, metadata.namespace, metadata.name, spec.agentRef). It
// caches every conversation it has seen (deleted ones too: their entries
// stay searchable) and lists the conversations again when asked about an
// unknown uid, at most once per relistAfter for the same uid.
type StoreResolver struct {
	Store ConversationLister

	mu     sync.Mutex
	byUID  map[string]Conversation
	missed map[string]time.Time
}

// Resolve implements Resolver.
func (r *StoreResolver) Resolve(ctx context.Context, uid string) (Conversation, bool, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if c, ok := r.byUID[uid]; ok {
		return c, true, nil
	}
	if at, ok := r.missed[uid]; ok && time.Since(at) < relistAfter {
		return Conversation{}, false, nil
	}
	list, err := r.Store.List(ctx, "conversations", "", nil)
	if err != nil {
		return Conversation{}, false, fmt.Errorf("listing conversations: %w", err)
	}
	if r.byUID == nil {
		r.byUID, r.missed = map[string]Conversation{}, map[string]time.Time{}
	}
	for _, it := range list.Items {
		agent, _, _ := unstructured.NestedString(it.Object, "spec", "agentRef")
		r.byUID[string(it.GetUID())] = Conversation{Namespace: it.GetNamespace(), Agent: agent, Name: it.GetName()}
	}
	c, ok := r.byUID[uid]
	if !ok {
		r.missed[uid] = time.Now()
	} else {
		delete(r.missed, uid)
	}
	return c, ok, nil
}
