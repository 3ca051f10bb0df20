package server

import (
	"net/http"

	"aicli.dev/aicli/guest/ptyapi"
)

// setCapabilities replaces the guest's capability set. Neither the body nor a decode error is logged: both may
// hold tokens.
func (s *srv) setCapabilities(w http.ResponseWriter, r *http.Request) {
	if s.caps == nil {
		s.fail(w, r, ptyapi.Errorf(ptyapi.ErrUnsupported, "this guest holds no capabilities"))
		return
	}
	var caps ptyapi.Capabilities
	if err := decode(w, r, &caps); err != nil {
		s.fail(w, r, ptyapi.Errorf(ptyapi.ErrInvalidArgument, "malformed capabilities"))
		return
	}
	s.done(w, r, s.caps.SetCapabilities(r.Context(), caps))
}
