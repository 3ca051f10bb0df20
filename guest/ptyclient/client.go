package ptyclient

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"

	"aicli.dev/aicli/guest/ptyapi"
	"aicli.dev/aicli/guest/server"
)

// maxResponseBytes bounds a JSON response (a screen of 1000x1000 wide cells fits).
const maxResponseBytes = 32 << 20

// Client implements ptyapi.PTY over HTTP. Safe for concurrent use.
type Client struct {
	hc   *http.Client
	base string
}

var (
	_ ptyapi.PTY                = (*Client)(nil)
	_ ptyapi.TranscriptFollower = (*Client)(nil)
	_ ptyapi.StatusWatcher      = (*Client)(nil)
)

// New returns a client for the guest at baseURL (e.g. "http://guest"; with a
// side-channel transport the host part is ignored by the dialer).
func New(hc *http.Client, baseURL string) *Client {
	if hc == nil {
		hc = http.DefaultClient
	}
	return &Client{hc: hc, base: strings.TrimRight(baseURL, "/")}
}

// call performs one JSON request; out may be nil for 204 responses.
func (c *Client) call(ctx context.Context, method, path string, in, out any) error {
	var body io.Reader
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return fmt.Errorf("encode %s: %w", path, err)
		}
		body = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, body)
	if err != nil {
		return fmt.Errorf("build %s: %w", path, err)
	}
	if in != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		return fmt.Errorf("guest %s: %w", path, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxResponseBytes))
	if err != nil {
		return fmt.Errorf("guest %s: read response: %w", path, err)
	}
	if resp.StatusCode >= 300 {
		return fmt.Errorf("guest %s: %w", path, server.ErrorFromBody(resp.StatusCode, data))
	}
	if out != nil {
		if err := json.Unmarshal(data, out); err != nil {
			return fmt.Errorf("guest %s: decode response: %w", path, err)
		}
	}
	return nil
}

// Start implements ptyapi.PTY.
func (c *Client) Start(ctx context.Context, req ptyapi.StartRequest) (ptyapi.StartResponse, error) {
	var out ptyapi.StartResponse
	err := c.call(ctx, http.MethodPost, server.PathStart, req, &out)
	return out, err
}

// SendString implements ptyapi.PTY.
func (c *Client) SendString(ctx context.Context, s string) error {
	return c.call(ctx, http.MethodPost, server.PathSendString, server.TextRequest{Text: s}, nil)
}

// SendKeys implements ptyapi.PTY.
func (c *Client) SendKeys(ctx context.Context, keys ...ptyapi.Key) error {
	return c.call(ctx, http.MethodPost, server.PathSendKeys, server.KeysRequest{Keys: keys}, nil)
}

// SendMessage implements ptyapi.PTY. An oversize message is refused locally
// with ptyapi.ErrMessageTooLarge without being sent.
func (c *Client) SendMessage(ctx context.Context, text string) error {
	if len(text) > ptyapi.MaxMessageBytes {
		return ptyapi.Errorf(ptyapi.ErrMessageTooLarge, "%d bytes, limit %d", len(text), ptyapi.MaxMessageBytes)
	}
	return c.call(ctx, http.MethodPost, server.PathSendMessage, server.TextRequest{Text: text}, nil)
}

// RenderScreen implements ptyapi.PTY.
func (c *Client) RenderScreen(ctx context.Context) (ptyapi.Screen, error) {
	var out ptyapi.Screen
	err := c.call(ctx, http.MethodGet, server.PathScreen, nil, &out)
	return out, err
}

// Resize implements ptyapi.PTY.
func (c *Client) Resize(ctx context.Context, cols, rows int) error {
	return c.call(ctx, http.MethodPost, server.PathResize, server.ResizeRequest{Cols: cols, Rows: rows}, nil)
}

// Status implements ptyapi.PTY.
func (c *Client) Status(ctx context.Context) (ptyapi.StatusInfo, error) {
	var out ptyapi.StatusInfo
	err := c.call(ctx, http.MethodGet, server.PathStatus, nil, &out)
	return out, err
}

// Quota implements ptyapi.PTY.
func (c *Client) Quota(ctx context.Context) (ptyapi.Quota, error) {
	var out ptyapi.Quota
	err := c.call(ctx, http.MethodGet, server.PathQuota, nil, &out)
	return out, err
}

// Stop implements ptyapi.PTY.
func (c *Client) Stop(ctx context.Context) error {
	return c.call(ctx, http.MethodPost, server.PathStop, nil, nil)
}

// Subscribe implements ptyapi.PTY: the returned reader is the streaming
// response body; it ends with io.EOF when the guest's stream ends cleanly,
// with the contract error (e.g. ptyapi.ErrSlowSubscriber) when the guest cut
// it, and with ctx's error when ctx ends.
func (c *Client) Subscribe(ctx context.Context) (io.ReadCloser, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.base+server.PathStream, nil)
	if err != nil {
		return nil, fmt.Errorf("build stream request: %w", err)
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		return nil, fmt.Errorf("guest %s: %w", server.PathStream, err)
	}
	if resp.StatusCode != http.StatusOK {
		defer resp.Body.Close()
		data, _ := io.ReadAll(io.LimitReader(resp.Body, maxResponseBytes))
		return nil, fmt.Errorf("guest %s: %w", server.PathStream, server.ErrorFromBody(resp.StatusCode, data))
	}
	return &streamBody{resp: resp, path: server.PathStream}, nil
}

// streamBody turns the stream's error trailer into a contract error at EOF.
type streamBody struct {
	resp *http.Response
	path string
}

func (b *streamBody) Read(p []byte) (int, error) {
	n, err := b.resp.Body.Read(p)
	if errors.Is(err, io.EOF) {
		if code := b.resp.Trailer.Get(server.TrailerStreamError); code != "" {
			return n, fmt.Errorf("guest %s: %w", b.path, &ptyapi.CodedError{
				Code: ptyapi.ErrorCode(code), Message: ptyapi.ErrorForCode(ptyapi.ErrorCode(code)).Error()})
		}
	}
	return n, err
}

func (b *streamBody) Close() error { return b.resp.Body.Close() }

// FollowTranscript implements ptyapi.TranscriptFollower over the guest's
// NDJSON transcript stream. It returns fn's error, the guest's error (typed),
// ctx's error, or nil when the guest ended the stream cleanly.
func (c *Client) FollowTranscript(ctx context.Context, fn func(ptyapi.TranscriptEntry) error) error {
	return followNDJSON(ctx, c, server.PathTranscript, fn)
}

// WatchStatus implements ptyapi.StatusWatcher over the guest's NDJSON status
// stream. It returns fn's error, the guest's error (typed; a guest too old to
// serve the stream is ptyapi.ErrUnsupported), ctx's error, or nil when the
// guest ended the stream cleanly.
func (c *Client) WatchStatus(ctx context.Context, fn func(ptyapi.StatusInfo) error) error {
	return followNDJSON(ctx, c, server.PathStatusWatch, fn)
}

// followNDJSON reads the guest's NDJSON stream at path, one T per line, and
// hands each to fn; a line longer than MaxStreamLine is skipped unread.
func followNDJSON[T any](ctx context.Context, c *Client, path string, fn func(T) error) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.base+path, nil)
	if err != nil {
		return fmt.Errorf("build %s request: %w", path, err)
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		return fmt.Errorf("guest %s: %w", path, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode == http.StatusNotFound {
		// No contract error maps to 404: the guest does not know the route.
		return fmt.Errorf("guest %s: %w", path, ptyapi.Errorf(ptyapi.ErrUnsupported, "the guest does not serve it"))
	}
	if resp.StatusCode != http.StatusOK {
		data, _ := io.ReadAll(io.LimitReader(resp.Body, maxResponseBytes))
		return fmt.Errorf("guest %s: %w", path, server.ErrorFromBody(resp.StatusCode, data))
	}
	lines := newLineReader(&streamBody{resp: resp, path: path}, MaxStreamLine)
	for {
		line, err := lines.next()
		if err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			if ctx.Err() != nil {
				return ctx.Err()
			}
			var ce *ptyapi.CodedError
			if errors.As(err, &ce) {
				return err // already names the path
			}
			return fmt.Errorf("guest %s: %w", path, err)
		}
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		var v T
		if err := json.Unmarshal(line, &v); err != nil {
			return fmt.Errorf("guest %s: %w", path, err)
		}
		if err := fn(v); err != nil {
			return err
		}
	}
}

// SetCapabilities replaces the guest's capability set (docs/decisions/0020). Tokens cannot be read back.
func (c *Client) SetCapabilities(ctx context.Context, caps ptyapi.Capabilities) error {
	return c.call(ctx, http.MethodPut, server.PathCapabilities, caps, nil)
}
