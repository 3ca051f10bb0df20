package supervisor

import (
	"context"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"aicli.dev/aicli/apis/v1alpha1"
	"aicli.dev/aicli/controllers"
	"aicli.dev/aicli/internal/runtime"
	"aicli.dev/aicli/internal/store"
)

// reapGrace protects containers created moments ago whose conversation
// status does not name them yet.
const reapGrace = 2 * time.Minute

// knownContainer tells the orphan reaper which labeled containers are still
// wanted: those of an existing conversation that desires Active. Everything
// else labeled with this supervisor's id is an orphan.
func knownContainer(st *store.Store) func(runtime.ContainerState) bool {
	return func(c runtime.ContainerState) bool {
		ns, name := c.Labels[runtime.LabelNamespace], c.Labels[runtime.LabelConversation]
		obj, err := st.Get(context.Background(), "conversations", ns, name)
		if err != nil {
			return false
		}
		desired, _, _ := unstructured.NestedString(obj.Object, "spec", "desiredState")
		return string(obj.GetUID()) == c.Labels[controllers.LabelConversationUID] &&
			desired == string(v1alpha1.ConversationActive) && obj.GetDeletionTimestamp() == nil
	}
}
