package authority

import (
	"context"
	"errors"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"aicli.dev/aicli/apis/v1alpha1"
	"aicli.dev/aicli/guest/toolwire"
	"aicli.dev/aicli/internal/capability"
	"aicli.dev/aicli/internal/grants"
	"aicli.dev/aicli/internal/storeclient"
	"aicli.dev/aicli/internal/tools"
)

// Refusal reasons the authorizer adds to the token's own (capability.Reason).
const (
	ReasonNoLease       = "no_lease"       // the conversation holds no unexpired lease
	ReasonRevoked       = "revoked"        // the grant changed or is gone since the token was minted
	ReasonQuotaExceeded = "quota_exceeded" // the tool's calls-per-hour cap is reached
	ReasonNoSecret      = "secret_missing" // a secret the tool needs is not set
	ReasonBadParams     = "param_mismatch" // the arguments are not what the tool's pins and declared parameters allow (tools.BackendArgs)
)

// SecretReader reads supervisor-held secrets.
type SecretReader interface {
	Get(namespace, name string) ([]byte, error)
}

// Authorizer checks tool calls (tools.Authorizer): the conversation holds a
// lease, the token verifies for this conversation, guest key, tool and
// parameters, its grant is unchanged (and a delegated grant's parent still
// covers it), the call cap holds; then it resolves the backend's secrets.
type Authorizer struct {
	Leases  *Manager
	Keys    *capability.Keyring
	Client  *storeclient.Client
	Secrets SecretReader
	Quota   *capability.Quota
	// Now is the clock (default time.Now).
	Now func() time.Time
}

func refuse(reason, format string, args ...any) error {
	return &tools.Refusal{Reason: reason, Message: fmt.Sprintf(format, args...)}
}

// toolRefusal names the tool in a *tools.Refusal's message.
func toolRefusal(tool string, err error) error {
	var r *tools.Refusal
	if !errors.As(err, &r) {
		return err
	}
	return refuse(r.Reason, "%s: %s", tool, r.Message)
}

// Authorize implements tools.Authorizer.
func (a *Authorizer) Authorize(ctx context.Context, c tools.Caller, r toolwire.Request) (*tools.Authorization, error) {
	v, lease, err := a.verify(c, r.Tool, r.Token)
	if err != nil {
		return nil, err
	}
	if v.Claims.Grant == grants.BuiltinGrant {
		// Built-ins parse their own arguments; a pin a holder added to its token still binds them.
		args, err := tools.BackendArgs(r.Args, v.Claims.Params, nil)
		if err != nil {
			return nil, toolRefusal(v.Claims.Tool, err)
		}
		return a.authorizeBuiltin(ctx, lease, v.Claims.Tool, args)
	}
	auth, err := a.authorizeVerified(ctx, lease, v, r)
	var ref *tools.Refusal
	if errors.As(err, &ref) {
		// The token verified: the refusal is counted on its grant.
		ref.Namespace, ref.Grant, ref.Conversation = lease.Namespace, v.Claims.Grant, lease.Conversation
	}
	return auth, err
}

// authorizeVerified checks what a verified token cannot: the grant now, the
// arguments against the token's pins and the tool's declared parameters, the
// call cap, and the secrets.
//
// The token's pins (v.Claims.Params: the grant's attenuation at mint and every
// param caveat, verified) are enforced here by the one strict parse of the
// arguments (tools.BackendArgs, docs/decisions/0031), whose canonical result
// is what the backend receives.
func (a *Authorizer) authorizeVerified(ctx context.Context, lease Lease, v capability.Verified, r toolwire.Request) (*tools.Authorization, error) {
	entry, grant, err := a.currentTool(ctx, lease.Namespace, v.Claims)
	if err != nil {
		return nil, err
	}
	tool, err := a.resolve(ctx, lease.Namespace, &entry, grant)
	if err != nil {
		return nil, err
	}
	// The token carries the attenuation as minted; the class may have
	// narrowed since, and whichever is narrower holds.
	att := grants.Narrowest(claimsAttenuation(v.Claims.Params, v.Claims.CallsPerHour), tool.Attenuation)
	if att.ExpiresAt != nil && !a.now().Before(att.ExpiresAt.Time) {
		return nil, refuse(ReasonRevoked, "%s: the capability expired at %s", tool.Name, att.ExpiresAt.UTC().Format(time.RFC3339))
	}
	args, err := tools.BackendArgs(r.Args, att.PinnedParams, tool.Parameters)
	if err != nil {
		return nil, toolRefusal(tool.Name, err)
	}
	if !a.Quota.Allow(lease.Namespace+"/"+grant.Name+"/"+tool.Name, int(att.MaxCallsPerHour), a.now()) {
		return nil, refuse(ReasonQuotaExceeded, "%s: the cap of %d calls per hour is reached", tool.Name, att.MaxCallsPerHour)
	}
	secrets := map[string][]byte{}
	for _, ref := range tool.SecretRefs {
		val, err := a.Secrets.Get(ref.Namespace, ref.Name)
		if err != nil {
			return nil, refuse(ReasonNoSecret, "%s: secret %s/%s is not available to the supervisor", tool.Name, ref.Namespace, ref.Name)
		}
		secrets[ref.Name] = val
	}
	return &tools.Authorization{
		Namespace: lease.Namespace, Agent: lease.Agent, Conversation: lease.Conversation, ConversationUID: lease.UID, Grant: grant.Name,
		Tool: tool, Secrets: secrets, Args: args,
	}, nil
}

// authorizeBuiltin checks that the agent still holds the built-in tool (its
// peer policy and Grants are read now); what the call reaches is checked by the
// built-in itself.
func (a *Authorizer) authorizeBuiltin(ctx context.Context, lease Lease, tool string, args []string) (*tools.Authorization, error) {
	agent := &v1alpha1.Agent{}
	err := a.Client.Get(ctx, lease.Namespace, lease.Agent, agent)
	if apierrors.IsNotFound(err) {
		return nil, refuse(ReasonRevoked, "%s: agent %q was deleted", tool, lease.Agent)
	} else if err != nil {
		return nil, err
	}
	var all v1alpha1.GrantList
	if err := a.Client.List(ctx, lease.Namespace, &all, nil); err != nil {
		return nil, err
	}
	var atts v1alpha1.MonitorAttachmentList
	if err := a.Client.List(ctx, lease.Namespace, &atts, nil); err != nil {
		return nil, err
	}
	for _, t := range grants.Builtins(agent, all.Items, atts.Items) {
		if t.Name == tool {
			return &tools.Authorization{
				Namespace: lease.Namespace, Agent: lease.Agent, Conversation: lease.Conversation, ConversationUID: lease.UID,
				Grant: grants.BuiltinGrant, Tool: t.ResolvedTool, Args: args, Builtin: true,
			}, nil
		}
	}
	return nil, refuse(ReasonRevoked, "%s: agent %q no longer holds this built-in tool (its spec.peers, Grants or MonitorAttachments changed)", tool, lease.Agent)
}

// verify checks the lease and the token as presented on this connection. The
// token's pins are checked against the arguments by authorizeVerified.
func (a *Authorizer) verify(c tools.Caller, tool, token string) (capability.Verified, Lease, error) {
	lease, ok := a.Leases.Lookup(c.ConversationUID)
	if !ok {
		return capability.Verified{}, Lease{}, refuse(ReasonNoLease, "this conversation holds no capability lease (it is not live)")
	}
	v, err := a.Keys.Verify(token, capability.Presentation{
		Namespace: lease.Namespace, Conversation: c.ConversationUID, Holder: c.GuestFingerprint,
		Tool: tool, Now: a.now(),
	})
	var ref *capability.Refusal
	if errors.As(err, &ref) {
		return capability.Verified{}, Lease{}, refuse(string(ref.Reason), "%s: capability refused: %s", tool, ref.Detail)
	}
	if err != nil {
		return capability.Verified{}, Lease{}, err
	}
	return v, lease, nil
}

// currentTool reads the token's grant: it must exist at the token's
// generation, still name the tool, and (when delegated) stay within its parent.
func (a *Authorizer) currentTool(ctx context.Context, namespace string, cl capability.Claims) (v1alpha1.ToolGrant, *v1alpha1.Grant, error) {
	g := &v1alpha1.Grant{}
	err := a.Client.Get(ctx, namespace, cl.Grant, g)
	switch {
	case apierrors.IsNotFound(err):
		return v1alpha1.ToolGrant{}, nil, refuse(ReasonRevoked, "%s: grant %q was deleted", cl.Tool, cl.Grant)
	case err != nil:
		return v1alpha1.ToolGrant{}, nil, err
	case g.Generation != cl.GrantGeneration || g.DeletionTimestamp != nil:
		return v1alpha1.ToolGrant{}, nil, refuse(ReasonRevoked, "%s: grant %q changed since the capability was issued", cl.Tool, cl.Grant)
	}
	var tool *v1alpha1.ToolGrant
	for i := range g.Spec.Tools {
		if g.Spec.Tools[i].Name == cl.Tool {
			tool = &g.Spec.Tools[i]
		}
	}
	if tool == nil {
		return v1alpha1.ToolGrant{}, nil, refuse(ReasonRevoked, "%s: grant %q no longer holds the tool", cl.Tool, cl.Grant)
	}
	if g.Spec.Delegation != nil {
		var all v1alpha1.GrantList
		if err := a.Client.List(ctx, namespace, &all, nil); err != nil {
			return v1alpha1.ToolGrant{}, nil, err
		}
		if err := grants.DelegationValid(g, all.Items); err != nil {
			return v1alpha1.ToolGrant{}, nil, refuse(ReasonRevoked, "%s: %v", cl.Tool, err)
		}
	}
	return *tool, g, nil
}

// resolve narrows a grant's tool entry onto its ToolClass as it is now: a
// class deleted, no longer admitting the namespace or narrower than the grant
// revokes the tool.
func (a *Authorizer) resolve(ctx context.Context, namespace string, entry *v1alpha1.ToolGrant, g *v1alpha1.Grant) (grants.ResolvedTool, error) {
	var class *v1alpha1.ToolClass
	if entry.ClassName != "" {
		c := &v1alpha1.ToolClass{}
		err := a.Client.Get(ctx, "", entry.ClassName, c)
		switch {
		case err == nil && c.DeletionTimestamp == nil:
			class = c
		case err != nil && !apierrors.IsNotFound(err):
			return grants.ResolvedTool{}, err
		}
	}
	tool, bad := grants.Resolve(namespace, entry, g.Spec.Attenuation, class)
	if bad != nil {
		return grants.ResolvedTool{}, refuse(ReasonRevoked, "%s", bad.Message)
	}
	return tool, nil
}

func (a *Authorizer) now() time.Time {
	if a.Now != nil {
		return a.Now()
	}
	return time.Now()
}
