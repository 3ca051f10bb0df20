package ptyclient_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"

	"aicli.dev/aicli/guest/ptyapi"
	"aicli.dev/aicli/guest/ptyclient"
	"aicli.dev/aicli/guest/server"
)

type capHolder struct{ got *ptyapi.Capabilities }

func (h *capHolder) SetCapabilities(_ context.Context, c ptyapi.Capabilities) error {
	h.got = &c
	return nil
}

// TestSetCapabilities: PUT replaces the set; there is no way to read tokens back; a guest without a holder answers
// unsupported.
func TestSetCapabilities(t *testing.T) {
	h := &capHolder{}
	srv := httptest.NewServer(server.NewHandler(nil, nil, server.WithCapabilities(h)))
	defer srv.Close()
	c := ptyclient.New(srv.Client(), srv.URL)
	caps := ptyapi.Capabilities{Tools: []ptyapi.ToolCap{{Name: "greet", Usage: "greet NAME", Token: "tok"}}}
	if err := c.SetCapabilities(context.Background(), caps); err != nil {
		t.Fatal(err)
	}
	if h.got == nil || h.got.Tools[0].Token != "tok" {
		t.Fatalf("holder got %+v", h.got)
	}
	resp, err := srv.Client().Get(srv.URL + server.PathCapabilities)
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusMethodNotAllowed {
		t.Fatalf("GET capabilities: %d", resp.StatusCode)
	}
	bare := httptest.NewServer(server.NewHandler(nil, nil))
	defer bare.Close()
	err = ptyclient.New(bare.Client(), bare.URL).SetCapabilities(context.Background(), caps)
	if !errors.Is(err, ptyapi.ErrUnsupported) {
		t.Fatalf("without a holder: %v", err)
	}
}
