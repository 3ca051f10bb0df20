package apiserver

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"

	jsonpatch "github.com/evanphx/json-patch/v5"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"

	"aicli.dev/aicli/apis/v1alpha1"
	"aicli.dev/aicli/internal/apischema"
	"aicli.dev/aicli/internal/store"
)

type request struct {
	s     *Server
	res   *apischema.Resource
	parts PathParts
	w     http.ResponseWriter
	r     *http.Request
}

func (h *request) collection() {
	switch h.r.Method {
	case http.MethodGet:
		if h.r.URL.Query().Get("watch") == "true" || h.r.URL.Query().Get("watch") == "1" {
			h.watch()
			return
		}
		h.list()
	case http.MethodPost:
		if h.res.Namespaced && h.parts.Namespace == "" {
			writeError(h.w, apierrors.NewMethodNotSupported(h.res.GroupResource(), "create without a namespace"))
			return
		}
		h.create()
	default:
		writeError(h.w, apierrors.NewMethodNotSupported(h.res.GroupResource(), h.r.Method))
	}
}

func (h *request) object() {
	switch h.r.Method {
	case http.MethodGet:
		obj, err := h.s.opts.Store.Get(h.r.Context(), h.res.Plural, h.parts.Namespace, h.parts.Name)
		h.reply(http.StatusOK, obj, err)
	case http.MethodPut:
		h.update(false)
	case http.MethodPatch:
		h.patch(false)
	case http.MethodDelete:
		h.delete()
	default:
		writeError(h.w, apierrors.NewMethodNotSupported(h.res.GroupResource(), h.r.Method))
	}
}

func (h *request) status() {
	switch h.r.Method {
	case http.MethodGet:
		obj, err := h.s.opts.Store.Get(h.r.Context(), h.res.Plural, h.parts.Namespace, h.parts.Name)
		h.reply(http.StatusOK, obj, err)
	case http.MethodPut:
		h.update(true)
	case http.MethodPatch:
		h.patch(true)
	default:
		writeError(h.w, apierrors.NewMethodNotSupported(h.res.GroupResource(), h.r.Method+" status"))
	}
}

func (h *request) reply(code int, obj *unstructured.Unstructured, err error) {
	if err != nil {
		writeError(h.w, err)
		return
	}
	body, err := obj.MarshalJSON()
	if err != nil {
		writeError(h.w, err)
		return
	}
	writeRaw(h.w, code, body)
}

func (h *request) selector() (labels.Selector, error) {
	raw := h.r.URL.Query().Get("labelSelector")
	sel, err := labels.Parse(raw)
	if err != nil {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("labelSelector %q: %v", raw, err))
	}
	return sel, nil
}

func (h *request) list() {
	sel, err := h.selector()
	if err != nil {
		writeError(h.w, err)
		return
	}
	list, err := h.s.opts.Store.List(h.r.Context(), h.res.Plural, h.parts.Namespace, sel)
	if err != nil {
		writeError(h.w, err)
		return
	}
	list.SetAPIVersion(v1alpha1.GroupVersion.String())
	list.SetKind(h.res.ListKind)
	body, err := list.MarshalJSON()
	if err != nil {
		writeError(h.w, err)
		return
	}
	writeRaw(h.w, http.StatusOK, body)
}

func (h *request) readBody() ([]byte, error) {
	body, err := io.ReadAll(io.LimitReader(h.r.Body, apischema.MaxObjectBytes+1))
	if err != nil {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("reading request body: %v", err))
	}
	if len(body) > apischema.MaxObjectBytes {
		return nil, apierrors.NewRequestEntityTooLargeError(
			fmt.Sprintf("request body exceeds %d bytes", apischema.MaxObjectBytes))
	}
	return body, nil
}

func (h *request) dryRun() bool { return h.r.URL.Query().Get("dryRun") == "All" }

// admit runs the resource's admitter; the returned unlock must be called after
// the write so that admission and write are atomic per resource.
func (h *request) admit(op Operation, old, obj *unstructured.Unstructured) (func(), error) {
	a, ok := h.s.opts.Admitters[h.res.Plural]
	if !ok {
		return func() {}, nil
	}
	mu, serial := h.s.writeMus[h.res.Plural]
	if !serial {
		return func() {}, a.Admit(h.r.Context(), op, old, obj)
	}
	mu.Lock()
	if err := a.Admit(h.r.Context(), op, old, obj); err != nil {
		mu.Unlock()
		return nil, err
	}
	return mu.Unlock, nil
}

func (h *request) create() {
	body, err := h.readBody()
	if err != nil {
		writeError(h.w, err)
		return
	}
	obj, err := h.s.opts.Registry.Decode(h.res, h.parts.Namespace, body)
	if err != nil {
		writeError(h.w, err)
		return
	}
	unstructured.RemoveNestedField(obj.Object, "status")
	unlock, err := h.admit(OpCreate, nil, obj)
	if err != nil {
		writeError(h.w, err)
		return
	}
	defer unlock()
	if h.dryRun() {
		h.reply(http.StatusOK, obj, nil)
		return
	}
	created, err := h.s.opts.Store.Create(h.r.Context(), h.res.Plural, obj)
	h.reply(http.StatusCreated, created, err)
}

func (h *request) checkIdentity(obj *unstructured.Unstructured) error {
	if obj.GetName() != h.parts.Name {
		return apierrors.NewBadRequest(fmt.Sprintf("metadata.name %q does not match the name in the URL %q", obj.GetName(), h.parts.Name))
	}
	return nil
}

func (h *request) update(statusOnly bool) {
	body, err := h.readBody()
	if err != nil {
		writeError(h.w, err)
		return
	}
	obj, err := h.s.opts.Registry.Decode(h.res, h.parts.Namespace, body)
	if err != nil {
		writeError(h.w, err)
		return
	}
	if err := h.checkIdentity(obj); err != nil {
		writeError(h.w, err)
		return
	}
	h.write(obj, statusOnly)
}

func (h *request) write(obj *unstructured.Unstructured, statusOnly bool) {
	ctx := h.r.Context()
	if statusOnly {
		if h.dryRun() {
			h.reply(http.StatusOK, obj, nil)
			return
		}
		updated, err := h.s.opts.Store.UpdateStatus(ctx, h.res.Plural, obj)
		h.reply(http.StatusOK, updated, err)
		return
	}
	old, err := h.s.opts.Store.Get(ctx, h.res.Plural, h.parts.Namespace, h.parts.Name)
	if err != nil {
		writeError(h.w, err)
		return
	}
	unlock, err := h.admit(OpUpdate, old, obj)
	if err != nil {
		writeError(h.w, err)
		return
	}
	defer unlock()
	if h.dryRun() {
		preview := obj.DeepCopy()
		for _, k := range []string{"uid", "creationTimestamp", "generation", "resourceVersion"} {
			if v, ok := old.Object["metadata"].(map[string]any)[k]; ok {
				_ = unstructured.SetNestedField(preview.Object, v, "metadata", k)
			}
		}
		if st, ok := old.Object["status"]; ok {
			preview.Object["status"] = st
		}
		h.reply(http.StatusOK, preview, nil)
		return
	}
	updated, err := h.s.opts.Store.Update(ctx, h.res.Plural, obj)
	h.reply(http.StatusOK, updated, err)
}

func (h *request) patch(statusOnly bool) {
	ct := h.r.Header.Get("Content-Type")
	if !strings.HasPrefix(ct, string(types.MergePatchType)) {
		writeError(h.w, apierrors.NewGenericServerResponse(http.StatusUnsupportedMediaType, "patch", h.res.GroupResource(), h.parts.Name,
			fmt.Sprintf("Content-Type %q is not supported: use %s", ct, types.MergePatchType), 0, false))
		return
	}
	patch, err := h.readBody()
	if err != nil {
		writeError(h.w, err)
		return
	}
	current, err := h.s.opts.Store.Get(h.r.Context(), h.res.Plural, h.parts.Namespace, h.parts.Name)
	if err != nil {
		writeError(h.w, err)
		return
	}
	currentJSON, err := current.MarshalJSON()
	if err != nil {
		writeError(h.w, err)
		return
	}
	merged, err := jsonpatch.MergePatch(currentJSON, patch)
	if err != nil {
		writeError(h.w, apierrors.NewBadRequest(fmt.Sprintf("merge patch: %v", err)))
		return
	}
	// The precondition is the patch's resourceVersion, if it names one.
	var meta struct {
		Metadata struct {
			ResourceVersion *string `json:"resourceVersion"`
		} `json:"metadata"`
	}
	_ = json.Unmarshal(patch, &meta)
	obj, err := h.s.opts.Registry.Decode(h.res, h.parts.Namespace, merged)
	if err != nil {
		writeError(h.w, err)
		return
	}
	if err := h.checkIdentity(obj); err != nil {
		writeError(h.w, err)
		return
	}
	if meta.Metadata.ResourceVersion == nil {
		obj.SetResourceVersion("")
	}
	h.write(obj, statusOnly)
}

func (h *request) delete() {
	var opts store.DeleteOptions
	if body, err := h.readBody(); err == nil && len(strings.TrimSpace(string(body))) > 0 {
		var del metav1.DeleteOptions
		if err := json.Unmarshal(body, &del); err != nil {
			writeError(h.w, apierrors.NewBadRequest(fmt.Sprintf("DeleteOptions: %v", err)))
			return
		}
		opts.Preconditions = del.Preconditions
	}
	obj, err := h.s.opts.Store.Delete(h.r.Context(), h.res.Plural, h.parts.Namespace, h.parts.Name, opts)
	if err != nil {
		writeError(h.w, err)
		return
	}
	if obj != nil && obj.GetDeletionTimestamp() != nil && len(obj.GetFinalizers()) > 0 {
		h.reply(http.StatusOK, obj, nil)
		return
	}
	writeJSON(h.w, http.StatusOK, &metav1.Status{
		TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"},
		Status:   metav1.StatusSuccess,
		Details:  &metav1.StatusDetails{Name: h.parts.Name, Group: v1alpha1.Group, Kind: h.res.Plural, UID: uidOf(obj)},
	})
}

func uidOf(obj *unstructured.Unstructured) types.UID {
	if obj == nil {
		return ""
	}
	return obj.GetUID()
}

// historyItem is one entry of GET …/{name}/history.
type historyItem struct {
	ResourceVersion string         `json:"resourceVersion"`
	Type            string         `json:"type"`
	Time            metav1.Time    `json:"time"`
	Object          map[string]any `json:"object,omitempty"`
}

func (h *request) history() {
	events, err := h.s.opts.Store.History(h.r.Context(), h.res.Plural, h.parts.Namespace, h.parts.Name)
	if err != nil {
		writeError(h.w, err)
		return
	}
	if len(events) == 0 {
		writeError(h.w, apierrors.NewNotFound(h.res.GroupResource(), h.parts.Name))
		return
	}
	items := make([]historyItem, 0, len(events))
	for _, e := range events {
		item := historyItem{ResourceVersion: fmt.Sprint(e.ResourceVersion), Type: e.Type, Time: metav1.NewTime(e.Time)}
		if e.Object != nil {
			item.Object = e.Object.Object
		}
		items = append(items, item)
	}
	writeJSON(h.w, http.StatusOK, map[string]any{"items": items})
}

func (s *Server) discovery(w http.ResponseWriter, r *http.Request) {
	list := metav1.APIResourceList{
		TypeMeta:     metav1.TypeMeta{Kind: "APIResourceList", APIVersion: "v1"},
		GroupVersion: v1alpha1.GroupVersion.String(),
	}
	for _, res := range s.opts.Registry.Resources() {
		verbs := metav1.Verbs{"create", "delete", "get", "list", "patch", "update", "watch"}
		list.APIResources = append(list.APIResources, metav1.APIResource{
			Name: res.Plural, SingularName: res.Singular, Namespaced: res.Namespaced,
			Kind: res.Kind, Verbs: verbs, ShortNames: res.ShortNames,
		})
		if res.HasStatus {
			list.APIResources = append(list.APIResources, metav1.APIResource{
				Name: res.Plural + "/status", Namespaced: res.Namespaced, Kind: res.Kind,
				Verbs: metav1.Verbs{"get", "patch", "update"},
			})
		}
	}
	writeJSON(w, http.StatusOK, list)
}
