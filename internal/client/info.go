package client

import (
	"context"

	"aicli.dev/aicli/internal/apischema"
	"aicli.dev/aicli/internal/supinfo/infowire"
)

// Info reads the supervisor's id, version, uptime, readiness and capacity
// (GET /apis/aicli.dev/v1alpha1/info). Any authenticated caller may read it;
// for a token bound to namespaces the reply is Restricted.
func (c *Client) Info(ctx context.Context) (*infowire.Info, error) {
	var info infowire.Info
	if err := c.getJSON(ctx, apischema.APIPath+"/"+infowire.Resource, "the supervisor info", &info); err != nil {
		return nil, err
	}
	return &info, nil
}
