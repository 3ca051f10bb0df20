package grants

import (
	"fmt"
	"slices"
	"sort"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"aicli.dev/aicli/apis/v1alpha1"
)

// PermissionError is a refused send: it names the permission that is missing.
type PermissionError struct {
	// Missing names the field that would have to allow the send
	// (spec.peers.sendTo of the sender, spec.peers.receiveFrom of the recipient).
	Missing string
	Msg     string
}

func (e *PermissionError) Error() string { return e.Msg }

// MaySend returns nil when sender may mail recipient: both in one namespace,
// not the same agent, the sender's spec.peers.sendTo (all, agents or
// selector) or one of its Grants' spec.peers names the recipient, and the
// recipient's spec.peers.receiveFrom, when set, names the sender. Each
// direction is separate: A may send to B says nothing about B to A. all holds
// the namespace's grants (invalid and deleted ones allow nothing).
func MaySend(sender, recipient *v1alpha1.Agent, all []v1alpha1.Grant) error {
	switch {
	case sender.Namespace != recipient.Namespace:
		return &PermissionError{Missing: "namespace", Msg: fmt.Sprintf(
			"agent %q may not send mail to %s/%s: mail stays within one namespace (owner)", sender.Name, recipient.Namespace, recipient.Name)}
	case sender.Name == recipient.Name:
		return &PermissionError{Missing: "spec.peers.sendTo", Msg: fmt.Sprintf("agent %q cannot send mail to itself", sender.Name)}
	}
	if !sendToAllows(sender, recipient, all) {
		return &PermissionError{Missing: "spec.peers.sendTo", Msg: fmt.Sprintf(
			"agent %q may not send mail to %q: missing permission: %q's spec.peers.sendTo does not include %q (nor does any Grant's spec.peers)",
			sender.Name, recipient.Name, sender.Name, recipient.Name)}
	}
	if p := recipient.Spec.Peers; p != nil && p.ReceiveFrom != nil && !setAllows(p.ReceiveFrom, sender) {
		return &PermissionError{Missing: "spec.peers.receiveFrom", Msg: fmt.Sprintf(
			"agent %q may not send mail to %q: missing permission: %q's spec.peers.receiveFrom does not include %q",
			sender.Name, recipient.Name, recipient.Name, sender.Name)}
	}
	return nil
}

// Recipients returns, sorted, the agents of candidates (the namespace's
// agents) that sender may mail.
func Recipients(sender *v1alpha1.Agent, candidates []v1alpha1.Agent, all []v1alpha1.Grant) []string {
	var out []string
	for i := range candidates {
		if candidates[i].DeletionTimestamp == nil && MaySend(sender, &candidates[i], all) == nil {
			out = append(out, candidates[i].Name)
		}
	}
	sort.Strings(out)
	return out
}

func sendToAllows(sender, recipient *v1alpha1.Agent, all []v1alpha1.Grant) bool {
	if p := sender.Spec.Peers; p != nil && p.SendTo != nil && setAllows(p.SendTo, recipient) {
		return true
	}
	for _, g := range held(all, sender.Name) {
		if slices.Contains(g.Spec.Peers, recipient.Name) {
			return true
		}
	}
	return false
}

// setAllows reports whether a peer set names the agent.
func setAllows(s *v1alpha1.PeerSet, a *v1alpha1.Agent) bool {
	if s.All || slices.Contains(s.Agents, a.Name) {
		return true
	}
	if s.Selector == nil {
		return false
	}
	sel, err := metav1.LabelSelectorAsSelector(s.Selector)
	if err != nil || sel.Empty() {
		return false // an invalid or empty selector allows nothing (admission rejects the first)
	}
	return sel.Matches(labels.Set(a.Labels))
}

// held returns the grants of all whose subject is agent and that are in
// force: not being deleted, valid, and (when delegated) within their parent.
func held(all []v1alpha1.Grant, agent string) []*v1alpha1.Grant {
	var out []*v1alpha1.Grant
	for i := range all {
		g := &all[i]
		if g.Spec.Subject == agent && g.DeletionTimestamp == nil && len(Validate(&g.Spec)) == 0 && DelegationValid(g, all) == nil {
			out = append(out, g)
		}
	}
	return out
}
