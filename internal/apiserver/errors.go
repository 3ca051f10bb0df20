package apiserver

import (
	"encoding/json"
	"errors"
	"net/http"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
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

// WriteJSON writes v as a JSON body with the status code.
func WriteJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(v)
}

func writeJSON(w http.ResponseWriter, code int, v any) { WriteJSON(w, code, v) }

// StatusMessage is a Status error on object name of gr whose message is
// exactly msg (no "Operation cannot be fulfilled" preamble), so that a client
// can print it as is.
func StatusMessage(gr schema.GroupResource, code int32, reason metav1.StatusReason, name, msg string) error {
	return &apierrors.StatusError{ErrStatus: metav1.Status{
		TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"},
		Status:   metav1.StatusFailure,
		Code:     code,
		Reason:   reason,
		Message:  msg,
		Details:  &metav1.StatusDetails{Name: name, Group: gr.Group, Kind: gr.Resource},
	}}
}

func writeRaw(w http.ResponseWriter, code int, body []byte) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_, _ = w.Write(body)
}
