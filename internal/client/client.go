package client

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"aicli.dev/aicli/apis/v1alpha1"
	"aicli.dev/aicli/internal/apischema"
)

// Content types the API speaks.
const (
	ContentTypeJSON       = "application/json"
	ContentTypeMergePatch = "application/merge-patch+json"
)

// maxErrorBody bounds how much of an error response is read.
const maxErrorBody = 1 << 20

// Client is a connection to one supervisor's API. It is safe for concurrent use.
type Client struct {
	cfg     Config
	base    string
	http    *http.Client
	timeout time.Duration
	reg     *apischema.Registry
}

// New builds a client for cfg. It does not contact the server.
func New(cfg Config) (*Client, error) {
	if cfg.Server == "" {
		cfg.Server = DefaultServer()
	}
	u, err := url.Parse(cfg.Server)
	if err != nil {
		return nil, fmt.Errorf("server %q: %w", cfg.Server, err)
	}
	c := &Client{cfg: cfg, reg: apischema.Default(), timeout: cfg.Timeout}
	if c.timeout == 0 {
		c.timeout = DefaultTimeout
	}
	tr := &http.Transport{
		MaxIdleConnsPerHost: 8,
		IdleConnTimeout:     90 * time.Second,
		ForceAttemptHTTP2:   true,
	}
	switch u.Scheme {
	case "unix":
		path := u.Path
		if u.Host != "" { // unix://relative/path
			path = u.Host + u.Path
		}
		if path == "" {
			return nil, fmt.Errorf("server %q: a unix server needs a socket path", cfg.Server)
		}
		var d net.Dialer
		tr.DialContext = func(ctx context.Context, _, _ string) (net.Conn, error) {
			return d.DialContext(ctx, "unix", path)
		}
		tr.ForceAttemptHTTP2 = false
		c.base = "http://unix"
	case "https":
		tlsCfg, err := tlsConfig(cfg)
		if err != nil {
			return nil, err
		}
		tr.TLSClientConfig = tlsCfg
		c.base = "https://" + u.Host
	case "http":
		// Plain HTTP only reaches loopback test servers; tokens are never sent over it.
		if !isLoopback(u.Hostname()) {
			return nil, fmt.Errorf("server %q: plain http is only allowed to a loopback address; use https://", cfg.Server)
		}
		c.base = "http://" + u.Host
	default:
		return nil, fmt.Errorf("server %q: scheme must be unix:// or https://", cfg.Server)
	}
	c.http = &http.Client{Transport: tr}
	return c, nil
}

func isLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

func tlsConfig(cfg Config) (*tls.Config, error) {
	t := &tls.Config{MinVersion: tls.VersionTLS12, InsecureSkipVerify: cfg.InsecureSkipVerify} //nolint:gosec // opt-in flag
	if cfg.CAFile == "" && len(cfg.CAData) == 0 {
		return t, nil
	}
	pool := x509.NewCertPool()
	if cfg.CAFile != "" {
		pem, err := os.ReadFile(cfg.CAFile)
		if err != nil {
			return nil, fmt.Errorf("certificate authority: %w", err)
		}
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("certificate authority %s: no PEM certificates found", cfg.CAFile)
		}
	}
	if len(cfg.CAData) > 0 && !pool.AppendCertsFromPEM(cfg.CAData) {
		return nil, errors.New("certificate authority data: no PEM certificates found")
	}
	t.RootCAs = pool
	return t, nil
}

// Config returns the configuration the client was built from.
func (c *Client) Config() Config { return c.cfg }

// Registry returns the resource registry used to map kinds to paths.
func (c *Client) Registry() *apischema.Registry { return c.reg }

// HTTPClient returns the underlying HTTP client (its transport dials the
// configured server whatever the request's host), for callers that need a
// raw connection such as a websocket attach.
func (c *Client) HTTPClient() *http.Client { return c.http }

// AuthHeader returns the headers that authenticate a request: the bearer
// token on HTTPS servers, nothing on the unix socket (and never on plain
// HTTP). Raw callers such as a websocket dial add these.
func (c *Client) AuthHeader() http.Header {
	h := http.Header{}
	if c.cfg.Token != "" && strings.HasPrefix(c.base, "https://") {
		h.Set("Authorization", "Bearer "+c.cfg.Token)
	}
	return h
}

// BaseURL returns the URL prefix requests are sent to ("http://unix" for a
// unix socket).
func (c *Client) BaseURL() string { return c.base }

// ResourcePath returns the API path of plural in namespace (all namespaces
// when empty), of the named object when name is set, and of its subresource.
func ResourcePath(plural, namespace, name string, subresource ...string) string {
	var b strings.Builder
	b.WriteString(apischema.APIPath)
	if res, ok := apischema.Default().Lookup(plural); ok && !res.Namespaced {
		namespace = "" // a cluster-scoped kind's path has no namespace
	}
	if namespace != "" {
		b.WriteString("/namespaces/")
		b.WriteString(url.PathEscape(namespace))
	}
	b.WriteString("/")
	b.WriteString(plural)
	if name != "" {
		b.WriteString("/")
		b.WriteString(url.PathEscape(name))
		for _, s := range subresource {
			b.WriteString("/")
			b.WriteString(s)
		}
	}
	return b.String()
}

// Do sends one request to path (which may carry a query) and returns the
// response when its status is 2xx. Any other status is returned as a
// *apierrors.StatusError decoded from the server's Status body, with the
// response body closed. The caller closes the body of a returned response.
// Do applies no timeout of its own: ctx bounds the whole exchange, so it
// suits streams.
func (c *Client) Do(ctx context.Context, method, path, contentType string, body io.Reader) (*http.Response, error) {
	return c.do(ctx, method, path, contentType, body)
}

// DoRaw is Do that reads the whole response body, bounded by the client
// timeout unless ctx already has a deadline.
func (c *Client) DoRaw(ctx context.Context, method, path, contentType string, body []byte) ([]byte, error) {
	var r io.Reader
	if body != nil {
		r = bytes.NewReader(body)
	}
	ctx, cancel := c.bound(ctx)
	defer cancel()
	resp, err := c.do(ctx, method, path, contentType, r)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("%s %s: reading response: %w", method, path, err)
	}
	return data, nil
}

// getJSON GETs path and decodes its JSON reply into v; what names the reply
// in a decoding error.
func (c *Client) getJSON(ctx context.Context, path, what string, v any) error {
	data, err := c.DoRaw(ctx, http.MethodGet, path, "", nil)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(data, v); err != nil {
		return fmt.Errorf("decoding %s: %w", what, err)
	}
	return nil
}

func (c *Client) bound(ctx context.Context) (context.Context, context.CancelFunc) {
	if _, ok := ctx.Deadline(); ok || c.timeout < 0 {
		return context.WithCancel(ctx)
	}
	return context.WithTimeout(ctx, c.timeout)
}

func (c *Client) do(ctx context.Context, method, path, contentType string, body io.Reader) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, body)
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", method, path, err)
	}
	req.Header.Set("Accept", ContentTypeJSON)
	if body != nil {
		if contentType == "" {
			contentType = ContentTypeJSON
		}
		req.Header.Set("Content-Type", contentType)
	}
	for k, v := range c.AuthHeader() {
		req.Header[k] = v
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, &ConnectionError{Server: c.cfg.Server, Err: err}
	}
	if resp.StatusCode >= 200 && resp.StatusCode < 300 {
		return resp, nil
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
	return nil, statusError(resp.StatusCode, method, path, data)
}

// ConnectionError reports that the server could not be reached at all.
type ConnectionError struct {
	Server string
	Err    error
}

func (e *ConnectionError) Error() string {
	return fmt.Sprintf("the connection to the server %s failed: %v", e.Server, e.Cause())
}

// Cause is the underlying network error without the request URL around it.
func (e *ConnectionError) Cause() error {
	var ue *url.Error
	if errors.As(e.Err, &ue) {
		return ue.Err
	}
	return e.Err
}

func (e *ConnectionError) Unwrap() error { return e.Err }

// statusError turns a non-2xx response into a StatusError, from the server's
// Status body when it sent one.
func statusError(code int, method, path string, body []byte) error {
	var st metav1.Status
	if err := json.Unmarshal(body, &st); err == nil && st.Kind == "Status" {
		if st.Code == 0 {
			st.Code = int32(code)
		}
		if st.Status == "" {
			st.Status = metav1.StatusFailure
		}
		if st.Reason == "" {
			st.Reason = apierrors.NewGenericServerResponse(code, method, schema.GroupResource{}, "", "", 0, false).ErrStatus.Reason
		}
		return &apierrors.StatusError{ErrStatus: st}
	}
	gr, name := groupResourceFromPath(path)
	msg := strings.TrimSpace(string(body))
	return apierrors.NewGenericServerResponse(code, method, gr, name, msg, 0, msg != "")
}

// groupResourceFromPath extracts the resource and name from an API path, for
// error messages when the server sent no Status.
func groupResourceFromPath(path string) (schema.GroupResource, string) {
	p, _, _ := strings.Cut(path, "?")
	rest, ok := strings.CutPrefix(p, apischema.APIPath+"/")
	if !ok {
		return schema.GroupResource{}, ""
	}
	parts := strings.Split(rest, "/")
	if len(parts) >= 2 && parts[0] == "namespaces" {
		parts = parts[2:]
	}
	gr := schema.GroupResource{Group: v1alpha1.Group}
	if len(parts) > 0 {
		gr.Resource = parts[0]
	}
	if len(parts) > 1 {
		return gr, parts[1]
	}
	return gr, ""
}

// IsConnectionError reports whether err means the server was unreachable.
func IsConnectionError(err error) bool {
	var ce *ConnectionError
	return errors.As(err, &ce)
}
