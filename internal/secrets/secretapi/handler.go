package secretapi

import (
	"errors"
	"fmt"
	"io"
	"net/http"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"aicli.dev/aicli/apis/v1alpha1"
	"aicli.dev/aicli/internal/apischema"
	"aicli.dev/aicli/internal/apiserver"
	"aicli.dev/aicli/internal/secrets"
	"aicli.dev/aicli/internal/secrets/secretwire"
)

// Store is the secret store the handlers write to.
type Store interface {
	Set(namespace, name string, value []byte) error
	Stat(namespace, name string) (secrets.Info, error)
	List(namespace string) ([]secrets.Info, error)
	Delete(namespace, name string) error
}

var secretsGR = v1alpha1.GroupVersion.WithResource(secretwire.Plural).GroupResource()

// Mount serves /namespaces/{namespace}/secrets[/{name}] on s. Requests are
// authenticated like every API request and the caller must be allowed in the
// namespace (apiserver.Authorized: role admin).
func Mount(s *apiserver.Server, st Store) {
	h := &handler{st: st}
	base := apischema.APIPath + "/namespaces/{namespace}/" + secretwire.Plural
	s.Handle(base, apiserver.Authorized("secrets", http.HandlerFunc(h.collection)))
	s.Handle(base+"/{name}", apiserver.Authorized("secrets", http.HandlerFunc(h.item)))
}

type handler struct {
	st Store
}

// collection is GET …/secrets: names, sizes and times.
func (h *handler) collection(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet {
		apiserver.WriteError(w, apierrors.NewMethodNotSupported(secretsGR, r.Method))
		return
	}
	infos, err := h.st.List(r.PathValue("namespace"))
	if err != nil {
		apiserver.WriteError(w, storeError(err, ""))
		return
	}
	list := secretwire.List{Items: make([]secretwire.Secret, 0, len(infos))}
	for _, i := range infos {
		list.Items = append(list.Items, describe(i))
	}
	apiserver.WriteJSON(w, http.StatusOK, list)
}

// item is PUT (set) and DELETE on …/secrets/{name}; a value is never read back.
func (h *handler) item(w http.ResponseWriter, r *http.Request) {
	switch r.Method {
	case http.MethodPut:
		h.set(w, r)
	case http.MethodDelete:
		h.delete(w, r)
	default:
		apiserver.WriteError(w, apierrors.NewMethodNotSupported(secretsGR, r.Method+" (secret values are write-only)"))
	}
}

func (h *handler) set(w http.ResponseWriter, r *http.Request) {
	ns, name := r.PathValue("namespace"), r.PathValue("name")
	value, err := io.ReadAll(http.MaxBytesReader(w, r.Body, secretwire.MaxValueBytes))
	var tooLarge *http.MaxBytesError
	switch {
	case errors.As(err, &tooLarge):
		apiserver.WriteError(w, apierrors.NewRequestEntityTooLargeError(
			fmt.Sprintf("secret values are limited to %d KiB", secretwire.MaxValueBytes>>10)))
		return
	case err != nil:
		apiserver.WriteError(w, apierrors.NewBadRequest("reading the secret value: "+err.Error()))
		return
	case len(value) == 0:
		apiserver.WriteError(w, apierrors.NewBadRequest("the secret value is empty"))
		return
	}
	_, statErr := h.st.Stat(ns, name)
	if err := h.st.Set(ns, name, value); err != nil {
		apiserver.WriteError(w, storeError(err, name))
		return
	}
	info, err := h.st.Stat(ns, name)
	if err != nil {
		apiserver.WriteError(w, storeError(err, name))
		return
	}
	code := http.StatusOK
	if errors.Is(statErr, secrets.ErrNotFound) {
		code = http.StatusCreated
	}
	apiserver.WriteJSON(w, code, describe(info))
}

func (h *handler) delete(w http.ResponseWriter, r *http.Request) {
	ns, name := r.PathValue("namespace"), r.PathValue("name")
	if _, err := h.st.Stat(ns, name); err != nil {
		apiserver.WriteError(w, storeError(err, name))
		return
	}
	if err := h.st.Delete(ns, name); err != nil {
		apiserver.WriteError(w, storeError(err, name))
		return
	}
	apiserver.WriteJSON(w, http.StatusOK, metav1.Status{
		TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"},
		Status:   metav1.StatusSuccess,
		Details:  &metav1.StatusDetails{Name: name, Group: secretsGR.Group, Kind: secretsGR.Resource},
	})
}

// storeError maps the store's errors to API statuses. Store errors name the
// secret, never its value.
func storeError(err error, name string) error {
	switch {
	case errors.Is(err, secrets.ErrNotFound):
		return apierrors.NewNotFound(secretsGR, name)
	case errors.Is(err, secrets.ErrInvalid):
		return apierrors.NewBadRequest(err.Error())
	}
	return err
}

func describe(i secrets.Info) secretwire.Secret {
	return secretwire.Secret{Name: i.Name, Size: i.Size, Modified: metav1.NewTime(i.Modified)}
}
