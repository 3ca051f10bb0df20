package convapi

import (
	"fmt"
	"net/http"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"aicli.dev/aicli/internal/apiserver"
)

// screen is GET …/conversations/{name}/screen: the rendered screen as
// ptyapi.Screen JSON, or its lines as plain text with ?format=text.
func (a *API) screen(w http.ResponseWriter, r *http.Request) {
	t, ok := a.resolve(w, r, http.MethodGet, conversationsPlural)
	if !ok {
		return
	}
	format := r.URL.Query().Get("format")
	if format != "" && format != "json" && format != "text" {
		apiserver.WriteError(w, apierrors.NewBadRequest(fmt.Sprintf("format %q: use json or text", format)))
		return
	}
	pty, err := a.livePTY(t)
	if err != nil {
		apiserver.WriteError(w, err)
		return
	}
	scr, err := pty.RenderScreen(r.Context())
	if err != nil {
		apiserver.WriteError(w, a.guestError(t, "render screen", err))
		return
	}
	if format != "text" {
		apiserver.WriteJSON(w, http.StatusOK, scr)
		return
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.WriteHeader(http.StatusOK)
	var b strings.Builder
	for _, line := range scr.Lines {
		b.WriteString(strings.TrimRight(line, " "))
		b.WriteByte('\n')
	}
	_, _ = w.Write([]byte(b.String()))
}
