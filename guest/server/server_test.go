package server

import (
	"errors"
	"net/http"
	"testing"

	"aicli.dev/aicli/guest/ptyapi"
)

func TestErrorMapping(t *testing.T) {
	for _, sentinel := range []error{ptyapi.ErrMessageTooLarge, ptyapi.ErrNotStarted, ptyapi.ErrAlreadyStarted,
		ptyapi.ErrExited, ptyapi.ErrUnknownHarness, ptyapi.ErrInvalidArgument} {
		wrapped := ptyapi.Errorf(sentinel, "context")
		code := ptyapi.CodeOf(wrapped)
		body := []byte(`{"error":{"code":"` + string(code) + `","message":"` + wrapped.Error() + `"}}`)
		got := ErrorFromBody(HTTPStatus(code), body)
		if !errors.Is(got, sentinel) || got.Error() != wrapped.Error() {
			t.Errorf("%v round trip gave %v", sentinel, got)
		}
		if HTTPStatus(code) == http.StatusInternalServerError {
			t.Errorf("%s maps to 500", code)
		}
	}
	// A proxy's HTML error page is still an error, an internal one.
	got := ErrorFromBody(http.StatusBadGateway, []byte("<html>bad gateway</html>"))
	if !errors.Is(got, ptyapi.ErrInternal) || errors.Is(got, ptyapi.ErrExited) {
		t.Fatalf("non-JSON body: %v", got)
	}
	if ptyapi.CodeOf(errors.New("plain")) != ptyapi.CodeInternal {
		t.Fatal("a plain error is not internal")
	}
}
