package client

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"

	"aicli.dev/aicli/internal/apischema"
	"aicli.dev/aicli/internal/supinfo/infowire"
)

// Info reads the supervisor's id, version, uptime, readiness and capacity
// (GET /apis/aicli.dev/v1alpha1/info). Any authenticated caller may read it;
// for a token bound to namespaces the reply is Restricted.
func (c *Client) Info(ctx context.Context) (*infowire.Info, error) {
	data, err := c.DoRaw(ctx, http.MethodGet, apischema.APIPath+"/"+infowire.Resource, "", nil)
	if err != nil {
		return nil, err
	}
	var info infowire.Info
	if err := json.Unmarshal(data, &info); err != nil {
		return nil, fmt.Errorf("supervisor info: decoding: %w", err)
	}
	return &info, nil
}
