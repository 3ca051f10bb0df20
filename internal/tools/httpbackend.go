package tools

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"

	"aicli.dev/aicli/apis/v1alpha1"
	"aicli.dev/aicli/guest/toolwire"
)

// httpBody is what an http backend receives.
type httpBody struct {
	Tool  string   `json:"tool"`
	Args  []string `json:"args"`
	Stdin string   `json:"stdin"`
}

// runHTTP calls an http backend: the call as JSON, each header secretRef as `Header: Prefix+value`; the response
// body is the call's stdout; 2xx exits 0, anything else 1 with the status on stderr.
func runHTTP(ctx context.Context, hc *http.Client, b *v1alpha1.HTTPBackend, auth *Authorization, stdin io.Reader, stdout, stderr io.Writer) (int, error) {
	in, err := io.ReadAll(io.LimitReader(stdin, toolwire.MaxStdin+1))
	if err != nil {
		return -1, err
	}
	args := auth.Args
	if args == nil {
		args = []string{}
	}
	body, err := json.Marshal(httpBody{Tool: auth.Tool.Name, Args: args, Stdin: string(in)})
	if err != nil {
		return -1, err
	}
	method := b.Method
	if method == "" {
		method = http.MethodPost
	}
	req, err := http.NewRequestWithContext(ctx, method, b.URL, bytes.NewReader(body))
	if err != nil {
		return -1, err
	}
	req.Header.Set("Content-Type", "application/json")
	for _, ref := range auth.Tool.SecretRefs {
		if ref.Header == "" {
			continue
		}
		v, ok := auth.Secrets[ref.Name]
		if !ok {
			return -1, fmt.Errorf("secret %q is not resolved", ref.Name)
		}
		req.Header.Set(ref.Header, ref.Prefix+string(v))
	}
	resp, err := hc.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return -1, nil // timeout or cancellation: the caller reports it
		}
		_, _ = fmt.Fprintf(stderr, "%s: http backend: %v\n", auth.Tool.Name, err)
		return 1, nil
	}
	defer func() { _ = resp.Body.Close() }()
	_, _ = io.Copy(stdout, resp.Body)
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		_, _ = fmt.Fprintf(stderr, "%s: http backend answered %s\n", auth.Tool.Name, resp.Status)
		return 1, nil
	}
	return 0, nil
}
