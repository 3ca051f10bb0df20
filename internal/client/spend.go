package client

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"

	"aicli.dev/aicli/internal/apischema"
	"aicli.dev/aicli/internal/spend"
)

// SpendOptions narrow a spend history read.
type SpendOptions struct {
	// Since is the first UTC day, YYYY-MM-DD; "" means 30 days ago.
	Since string
	// Agent, when set, keeps only the agent of that name.
	Agent string
}

// SpendHistoryJSON returns the raw spend history of namespace (every
// namespace when "", which needs a token for all namespaces): GET
// …/spendhistory, the JSON of spend.Report.
func (c *Client) SpendHistoryJSON(ctx context.Context, namespace string, opts SpendOptions) ([]byte, error) {
	path := apischema.APIPath + "/spendhistory"
	if namespace != "" {
		path = apischema.APIPath + "/namespaces/" + url.PathEscape(namespace) + "/spendhistory"
	}
	q := url.Values{}
	if opts.Since != "" {
		q.Set("since", opts.Since)
	}
	if opts.Agent != "" {
		q.Set("agent", opts.Agent)
	}
	if len(q) > 0 {
		path += "?" + q.Encode()
	}
	return c.DoRaw(ctx, http.MethodGet, path, "", nil)
}

// SpendHistory reads tokens and cost per UTC day and model (the four
// buckets), per agent, and the agents' live quota windows
// (docs/spend.md). namespace "" reads every namespace.
func (c *Client) SpendHistory(ctx context.Context, namespace string, opts SpendOptions) (*spend.Report, error) {
	data, err := c.SpendHistoryJSON(ctx, namespace, opts)
	if err != nil {
		return nil, err
	}
	var rep spend.Report
	if err := json.Unmarshal(data, &rep); err != nil {
		return nil, fmt.Errorf("spend history: decoding: %w", err)
	}
	return &rep, nil
}
