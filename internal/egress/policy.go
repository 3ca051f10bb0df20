package egress

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"strconv"
	"strings"

	"aicli.dev/aicli/guest/egress/egresswire"
)

// DefaultPorts are the ports an allow-list entry without an explicit port permits.
var defaultPorts = []int{443, 80}

// Rule is one allow-list entry.
type Rule struct {
	// Host is a lower-case host name or IP literal; with Wildcard it is the parent domain ("example.com").
	Host string
	// Wildcard makes the rule match every proper subdomain of Host (never Host itself, never an IP literal).
	Wildcard bool
	// Port is the one allowed port; 0 means 443 and 80.
	Port int
}

// String renders the rule in allow-list syntax.
func (r Rule) String() string {
	s := r.Host
	if r.Wildcard {
		s = "*." + s
	}
	if r.Port != 0 {
		s = net.JoinHostPort(s, strconv.Itoa(r.Port))
	}
	return s
}

// ParseRule parses an allow-list entry: "host", "host:port", "*.domain" or "*.domain:port".
func ParseRule(entry string) (Rule, error) {
	s := strings.ToLower(strings.TrimSpace(entry))
	var r Rule
	if h, p, err := net.SplitHostPort(s); err == nil {
		port, perr := parsePort(p)
		if perr != nil {
			return Rule{}, fmt.Errorf("allow entry %q: %w", entry, perr)
		}
		s, r.Port = h, port
	} else if strings.Contains(s, ":") && !isIP(s) {
		return Rule{}, fmt.Errorf("allow entry %q: %w", entry, err)
	}
	if rest, ok := strings.CutPrefix(s, "*."); ok {
		r.Wildcard, s = true, rest
		if isIP(s) {
			return Rule{}, fmt.Errorf("allow entry %q: a wildcard needs a domain, not an IP address", entry)
		}
	}
	s = strings.TrimSuffix(s, ".")
	if !isIP(s) && !validHostname(s) {
		return Rule{}, fmt.Errorf("allow entry %q: not a host name", entry)
	}
	if r.Wildcard && !strings.Contains(s, ".") {
		return Rule{}, fmt.Errorf("allow entry %q: a wildcard must name at least a two-label domain", entry)
	}
	r.Host = canonicalHost(s)
	return r, nil
}

// Policy is what one conversation may reach. The zero Policy denies everything.
type Policy struct {
	// Provider is the agent's provider endpoint (http or https); nil when the agent names none. Provider streams
	// are reverse-proxied to it, and its host:port is also allowed for tunnels.
	Provider *url.URL
	// Allow is the allow-list.
	Allow []Rule
}

// NewPolicy builds a Policy from an Agent's provider endpoint (may be empty) and egress allow-list entries.
func NewPolicy(providerEndpoint string, allow []string) (Policy, error) {
	var p Policy
	var errs []error
	if providerEndpoint != "" {
		u, err := url.Parse(providerEndpoint)
		switch {
		case err != nil:
			errs = append(errs, fmt.Errorf("provider endpoint: %w", err))
		case u.Scheme != "http" && u.Scheme != "https":
			errs = append(errs, fmt.Errorf("provider endpoint %q: scheme must be http or https", providerEndpoint))
		case u.Host == "" || u.User != nil:
			errs = append(errs, fmt.Errorf("provider endpoint %q: want scheme://host[:port][/path] without user info", providerEndpoint))
		default:
			p.Provider = u
		}
	}
	for _, e := range allow {
		r, err := ParseRule(e)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		p.Allow = append(p.Allow, r)
	}
	if err := errors.Join(errs...); err != nil {
		return Policy{}, fmt.Errorf("egress policy: %w", err)
	}
	return p, nil
}

// Denial is a policy refusal: Reason is machine-readable, Message explains it.
type Denial struct {
	Reason  egresswire.Reason
	Message string
}

func (d *Denial) Error() string { return fmt.Sprintf("egress denied (%s): %s", d.Reason, d.Message) }

// CheckTarget parses "host:port" and reports whether the policy allows a tunnel to it. It never resolves names.
func (p Policy) CheckTarget(target string) (host string, port int, err error) {
	h, ps, err := net.SplitHostPort(target)
	if err != nil {
		return "", 0, &Denial{egresswire.ReasonMalformedHeader, "target is not host:port"}
	}
	port, err = parsePort(ps)
	if err != nil {
		return "", 0, &Denial{egresswire.ReasonMalformedHeader, err.Error()}
	}
	h = strings.TrimSuffix(strings.ToLower(h), ".")
	if !isIP(h) && !validHostname(h) {
		return "", 0, &Denial{egresswire.ReasonMalformedHeader, "target host is not a host name or IP address"}
	}
	h = canonicalHost(h)
	hostSeen := false
	if p.Provider != nil {
		if ph, pp := providerHostPort(p.Provider); ph == h {
			if pp == port {
				return h, port, nil
			}
			hostSeen = true
		}
	}
	for _, r := range p.Allow {
		if !r.matchesHost(h) {
			continue
		}
		hostSeen = true
		if r.allowsPort(port) {
			return h, port, nil
		}
	}
	if hostSeen {
		return "", 0, &Denial{egresswire.ReasonPortNotAllowed, fmt.Sprintf("port %d of %s is not on the allow-list", port, h)}
	}
	return "", 0, &Denial{egresswire.ReasonHostNotAllowed, fmt.Sprintf("%s is not on the allow-list", h)}
}

func (r Rule) matchesHost(h string) bool {
	if !r.Wildcard {
		return h == r.Host
	}
	return !isIP(h) && strings.HasSuffix(h, "."+r.Host)
}

func (r Rule) allowsPort(port int) bool {
	if r.Port != 0 {
		return port == r.Port
	}
	for _, d := range defaultPorts {
		if port == d {
			return true
		}
	}
	return false
}

// providerHostPort is the provider endpoint's canonical host and effective port.
func providerHostPort(u *url.URL) (string, int) {
	h := canonicalHost(strings.TrimSuffix(strings.ToLower(u.Hostname()), "."))
	if ps := u.Port(); ps != "" {
		if p, err := parsePort(ps); err == nil {
			return h, p
		}
	}
	if u.Scheme == "https" {
		return h, 443
	}
	return h, 80
}

func parsePort(s string) (int, error) {
	p, err := strconv.Atoi(s)
	if err != nil || p < 1 || p > 65535 || strconv.Itoa(p) != s {
		return 0, fmt.Errorf("port %q is not 1-65535", s)
	}
	return p, nil
}

func isIP(s string) bool {
	_, err := netip.ParseAddr(s)
	return err == nil
}

// canonicalHost normalises IP literals (e.g. "::0001" → "::1"); names pass through.
func canonicalHost(s string) string {
	if a, err := netip.ParseAddr(s); err == nil {
		return a.Unmap().String()
	}
	return s
}

// validHostname accepts lower-case LDH labels separated by dots, at most 253 bytes.
func validHostname(s string) bool {
	if s == "" || len(s) > 253 {
		return false
	}
	for _, label := range strings.Split(s, ".") {
		if label == "" || len(label) > 63 || label[0] == '-' || label[len(label)-1] == '-' {
			return false
		}
		for i := 0; i < len(label); i++ {
			c := label[i]
			if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
				return false
			}
		}
	}
	return true
}
