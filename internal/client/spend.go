package client

import (
	"context"
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
	return c.DoRaw(ctx, http.MethodGet, spendHistoryPath(namespace, opts), "", nil)
}

func spendHistoryPath(namespace string, opts SpendOptions) string {
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
	return path
}

// SpendHistory reads tokens and cost per UTC day and model (the four
// buckets), per agent, and the agents' live quota windows
// (docs/spend.md). namespace "" reads every namespace.
func (c *Client) SpendHistory(ctx context.Context, namespace string, opts SpendOptions) (*spend.Report, error) {
	var rep spend.Report
	if err := c.getJSON(ctx, spendHistoryPath(namespace, opts), "the spend history", &rep); err != nil {
		return nil, err
	}
	return &rep, nil
}
