package console

import (
	"context"
	"net/http"
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"aicli.dev/aicli/internal/client"
)

// describeEvent is one line of an object's history.
type describeEvent struct {
	Type, ResourceVersion, Age, Change string
	Time                               time.Time
}

type describeData struct {
	Supervisor, Resource string
	Row                  statusRow
	Labels               []string
	Created              time.Time
	Age                  string
	UID, ResourceVersion string
	// Spec and Status are YAML (status without its conditions and observedGeneration).
	Spec, Status string
	History      []describeEvent
	HistoryErr   string
	Link         string // the conversation page, for conversations
}

// describePage shows one object as `aictl describe` does: its metadata,
// spec, conditions and history, newest change first
// (GET /manage/describe/{supervisor}/{resource}/{namespace}/{name}).
func (s *Server) describePage(w http.ResponseWriter, r *http.Request) {
	sup, err := s.supervisor(r.PathValue("supervisor"))
	if err != nil {
		s.fail(w, r, "manage", err)
		return
	}
	resource, ns, name := r.PathValue("resource"), r.PathValue("namespace"), r.PathValue("name")
	if ns == "-" {
		ns = ""
	}
	res, err := sup.Client.Resource(resource)
	if err != nil {
		s.fail(w, r, "manage", badRequest("%s", err.Error()))
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), listTimeout)
	defer cancel()
	obj, err := sup.Client.Get(ctx, res.Plural, ns, name)
	if err != nil {
		s.fail(w, r, "manage", err)
		return
	}
	history, histErr := sup.Client.History(ctx, res.Plural, ns, name)
	d := describeObject(sup.Name, res.Plural, res.HasStatus, obj, history, time.Now())
	if histErr != nil {
		_, d.HistoryErr = ErrorMessage(histErr)
	}
	s.render(w, http.StatusOK, "describe", s.page(r, "manage", "status", res.Kind+" "+name, d))
}

// describeObject builds the view of obj and its history (oldest first).
func describeObject(sup, resource string, hasStatus bool, obj *unstructured.Unstructured, history []client.HistoryEntry, now time.Time) describeData {
	d := describeData{Supervisor: sup, Resource: resource, Row: statusRowOf(sup, resource, hasStatus, obj),
		UID: string(obj.GetUID()), ResourceVersion: obj.GetResourceVersion(), Created: obj.GetCreationTimestamp().Time}
	d.Age = age(now, d.Created)
	for k, v := range obj.GetLabels() {
		d.Labels = append(d.Labels, k+"="+v)
	}
	slices.Sort(d.Labels)
	if resource == "conversations" {
		d.Link = "/manage/conversations/" + sup + "/" + obj.GetNamespace() + "/" + obj.GetName()
	}
	if spec, ok := obj.Object["spec"]; ok {
		d.Spec = toYAML(spec)
	}
	if st, ok := obj.Object["status"].(map[string]any); ok {
		rest := map[string]any{}
		for k, v := range st {
			if k != "conditions" && k != "observedGeneration" {
				rest[k] = v
			}
		}
		if len(rest) > 0 {
			d.Status = toYAML(rest)
		}
	}
	var prev *unstructured.Unstructured
	for _, h := range history {
		d.History = append(d.History, describeEvent{Type: h.Type, ResourceVersion: h.ResourceVersion, Time: h.Time.Time,
			Age: age(now, h.Time.Time), Change: client.SummarizeChange(h.Type, prev, h.Object)})
		if h.Object != nil {
			prev = h.Object
		}
	}
	// Newest first: the last change is what the reader came for.
	for i, j := 0, len(d.History)-1; i < j; i, j = i+1, j-1 {
		d.History[i], d.History[j] = d.History[j], d.History[i]
	}
	return d
}

func toYAML(v any) string {
	b, err := yaml.Marshal(v)
	if err != nil {
		return "unprintable: " + err.Error()
	}
	return strings.TrimRight(string(b), "\n")
}
