package authority

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"aicli.dev/aicli/apis/v1alpha1"
	"aicli.dev/aicli/guest/toolwire"
	"aicli.dev/aicli/internal/grants"
	"aicli.dev/aicli/internal/tools"
)

// ReasonNotAPeer refuses a delegation to an agent the caller may not message.
const ReasonNotAPeer = "not_a_peer"

// Delegator serves `aicli-tool delegate PEER TOOL …` (tools.Delegator): after
// the caller's capability for TOOL verifies, it creates a Grant for PEER with
// spec.delegation, a copy of the caller's tool narrowed by what was asked.
// It can only narrow: the copy keeps every pin, cap and expiry of the
// caller's (grants.Narrowest), and the grant controller and the authorizer
// refuse it the moment it is wider than its parent.
type Delegator struct {
	*Authorizer
}

// Delegate implements tools.Delegator.
func (d Delegator) Delegate(ctx context.Context, c tools.Caller, token, toolName string, req toolwire.DelegateArgs) (string, error) {
	v, lease, err := d.verify(c, toolName, token)
	if err != nil {
		return "", err
	}
	tool, parent, err := d.currentTool(ctx, lease.Namespace, v.Claims)
	if err != nil {
		return "", err
	}
	agent := &v1alpha1.Agent{}
	if err := d.Client.Get(ctx, lease.Namespace, lease.Agent, agent); err != nil {
		return "", err
	}
	peer := &v1alpha1.Agent{}
	if err := d.Client.Get(ctx, lease.Namespace, req.Peer, peer); apierrors.IsNotFound(err) {
		return "", refuse(ReasonNotAPeer, "agent %q does not exist", req.Peer)
	} else if err != nil {
		return "", err
	}
	var all v1alpha1.GrantList
	if err := d.Client.List(ctx, lease.Namespace, &all, nil); err != nil {
		return "", err
	}
	if err := grants.MaySend(agent, peer, all.Items); err != nil {
		return "", refuse(ReasonNotAPeer, "%v, so it cannot delegate to it", err)
	}
	asked := &v1alpha1.Attenuation{PinnedParams: req.Params, MaxCallsPerHour: int32(req.CallsPerHour)}
	if req.TTL != "" {
		ttl, err := time.ParseDuration(req.TTL)
		if err != nil || ttl <= 0 {
			return "", refuse(toolwire.RefusedMalformed, "--ttl %q is not a positive duration (e.g. 10m)", req.TTL)
		}
		exp := metav1.NewTime(d.now().Add(ttl).Truncate(time.Second))
		asked.ExpiresAt = &exp
	}
	tool.Attenuation = grants.Narrowest(grants.Narrowest(tool.Attenuation, parent.Spec.Attenuation), asked)
	// The token's own attenuation (pins, cap, expiry) carries over too.
	tool.Attenuation = grants.Narrowest(tool.Attenuation, claimsAttenuation(v.Claims.Params, v.Claims.CallsPerHour))
	g := &v1alpha1.Grant{Spec: v1alpha1.GrantSpec{
		Subject:    req.Peer,
		Tools:      []v1alpha1.ToolGrant{tool},
		Delegation: &v1alpha1.Delegation{Parent: parent.Name, By: lease.Agent, Conversation: lease.Conversation},
	}}
	g.Namespace, g.Name = lease.Namespace, delegatedName(lease.Agent, req.Peer, tool.Name)
	if err := grants.DelegationValid(g, []v1alpha1.Grant{*parent}); err != nil {
		return "", refuse(ReasonRevoked, "%v", err)
	}
	if err := d.Client.Create(ctx, g); err != nil {
		return "", fmt.Errorf("creating the delegated grant: %w", err)
	}
	return fmt.Sprintf("delegated %s to %s as grant %s\n", tool.Name, req.Peer, g.Name), nil
}

func claimsAttenuation(params map[string]string, perHour int) *v1alpha1.Attenuation {
	return &v1alpha1.Attenuation{PinnedParams: params, MaxCallsPerHour: int32(perHour)}
}

// delegatedName is a fresh, valid object name: from-to-tool-suffix.
func delegatedName(from, to, tool string) string {
	var b [3]byte
	_, _ = rand.Read(b[:])
	base := strings.NewReplacer(".", "-", "_", "-").Replace(fmt.Sprintf("%s-to-%s-%s", from, to, tool))
	if len(base) > 56 {
		base = strings.TrimRight(base[:56], "-")
	}
	return base + "-" + hex.EncodeToString(b[:])
}
