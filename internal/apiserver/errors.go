package apiserver

import (
	"encoding/json"
	"errors"
	"net/http"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// WriteError writes err as a Kubernetes Status object: an apimachinery
// APIStatus keeps its code, anything else becomes a 500. Subresource handlers
// mounted with HandleSubresource use it for their errors.
func WriteError(w http.ResponseWriter, err error) { writeError(w, err) }

// writeError writes err as a Kubernetes Status object.
func writeError(w http.ResponseWriter, err error) {
	status := toStatus(err)
	writeJSON(w, int(status.Code), status)
}

func toStatus(err error) *metav1.Status {
	var apiStatus apierrors.APIStatus
	if errors.As(err, &apiStatus) {
		s := apiStatus.Status()
		if s.Kind == "" {
			s.Kind, s.APIVersion = "Status", "v1"
		}
		if s.Code == 0 {
			s.Code = http.StatusInternalServerError
		}
		return &s
	}
	s := apierrors.NewInternalError(err).Status()
	s.Kind, s.APIVersion = "Status", "v1"
	return &s
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(v)
}

func writeRaw(w http.ResponseWriter, code int, body []byte) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_, _ = w.Write(body)
}
