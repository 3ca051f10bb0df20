package authority

import (
	"cmp"
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
	// MaxLive caps the live delegated grants one agent has made (default
	// DefaultMaxLiveDelegations); a delegation past it is refused.
	MaxLive int
	// PerHour caps one agent's delegations per hour (default
	// DefaultDelegationsPerHour); each also counts as a call of the tool
	// against its own calls-per-hour cap.
	PerHour int
}

// Delegation limits by default.
const (
	DefaultMaxLiveDelegations = 32
	DefaultDelegationsPerHour = 60
)

// ReasonDelegationLimit refuses a delegation past Delegator.MaxLive or PerHour.
const ReasonDelegationLimit = "delegation_limit"

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
	if err := d.withinLimits(lease, parent, toolName, v.Claims.CallsPerHour, all.Items); err != nil {
		return "", err
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

// withinLimits refuses a delegation when the agent already has MaxLive
// delegated grants alive, has delegated PerHour times this hour, or the
// tool's own call cap is reached (a delegation counts as a call).
func (d Delegator) withinLimits(lease Lease, parent *v1alpha1.Grant, tool string, callsPerHour int, all []v1alpha1.Grant) error {
	maxLive, perHour := cmp.Or(d.MaxLive, DefaultMaxLiveDelegations), cmp.Or(d.PerHour, DefaultDelegationsPerHour)
	live := 0
	for i := range all {
		if dl := all[i].Spec.Delegation; dl != nil && dl.By == lease.Agent && all[i].DeletionTimestamp == nil {
			live++
		}
	}
	now := d.now()
	switch {
	case live >= maxLive:
		return refuse(ReasonDelegationLimit, "agent %q already has %d live delegated grants (the limit); delete one first", lease.Agent, live)
	case !d.Quota.Allow(lease.Namespace+"/"+lease.Agent+"/@delegate", perHour, now):
		return refuse(ReasonDelegationLimit, "agent %q has delegated %d times this hour (the limit)", lease.Agent, perHour)
	case !d.Quota.Allow(lease.Namespace+"/"+parent.Name+"/"+tool, callsPerHour, now):
		return refuse(ReasonQuotaExceeded, "%s: the cap of %d calls per hour is reached (a delegation counts as a call)", tool, callsPerHour)
	}
	return nil
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
