package client

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/coder/websocket"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"aicli.dev/aicli/internal/convapi/wire"
)

// AttachURL is the websocket URL of conversation namespace/name's attach
// subresource.
func (c *Client) AttachURL(namespace, name string) string {
	base := c.BaseURL()
	switch {
	case strings.HasPrefix(base, "https://"):
		base = "wss://" + strings.TrimPrefix(base, "https://")
	case strings.HasPrefix(base, "http://"):
		base = "ws://" + strings.TrimPrefix(base, "http://")
	}
	return base + ResourcePath(conversations, namespace, name, wire.SubAttach)
}

// DialAttach opens the attach websocket of conversation namespace/name
// (binary frames: PTY output from the server, keystrokes to it; text frames:
// wire.ControlMessage to it). Its read limit is off. A refused handshake is
// the server's Status error (a conversation that is not live is 409).
func (c *Client) DialAttach(ctx context.Context, namespace, name string) (*websocket.Conn, error) {
	header := http.Header{}
	if tok := c.cfg.Token; tok != "" && strings.HasPrefix(c.BaseURL(), "https://") {
		header.Set("Authorization", "Bearer "+tok)
	}
	conn, resp, err := websocket.Dial(ctx, c.AttachURL(namespace, name), &websocket.DialOptions{
		HTTPClient: c.HTTPClient(), HTTPHeader: header,
	})
	if err != nil {
		return nil, c.dialError(resp, err)
	}
	conn.SetReadLimit(-1)
	return conn, nil
}

// dialError turns a refused websocket handshake into the server's Status.
func (c *Client) dialError(resp *http.Response, err error) error {
	if resp == nil {
		return &ConnectionError{Server: c.cfg.Server, Err: err}
	}
	body, _ := io.ReadAll(resp.Body)
	var st metav1.Status
	if json.Unmarshal(body, &st) == nil && st.Kind == "Status" {
		if st.Code == 0 {
			st.Code = int32(resp.StatusCode)
		}
		return &apierrors.StatusError{ErrStatus: st}
	}
	return fmt.Errorf("websocket handshake refused (HTTP %d): %w", resp.StatusCode, err)
}
