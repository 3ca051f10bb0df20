package auth

import (
	"fmt"
	"net/http"
	"net/netip"
	"strings"
)

// Proxies are the reverse proxies the console believes: only a request whose
// peer is one of them may say, in X-Forwarded-For, -Proto and -Host, who the
// client is, whether it came over https and which host it asked for. Those
// headers from anyone else are ignored.
type Proxies []netip.Prefix

// ParseProxies reads --trusted-proxy values: a CIDR (10.0.0.0/8) or one
// address.
func ParseProxies(specs []string) (Proxies, error) {
	var p Proxies
	for _, s := range specs {
		s = strings.TrimSpace(s)
		if s == "" {
			continue
		}
		if pfx, err := netip.ParsePrefix(s); err == nil {
			p = append(p, pfx.Masked())
			continue
		}
		a, err := netip.ParseAddr(s)
		if err != nil {
			return nil, fmt.Errorf("trusted proxy %q: want an address or a CIDR such as 10.0.0.0/8", s)
		}
		a = a.Unmap().WithZone("")
		p = append(p, netip.PrefixFrom(a, a.BitLen()))
	}
	return p, nil
}

// Trusts reports whether a is one of the proxies.
func (p Proxies) Trusts(a netip.Addr) bool {
	if !a.IsValid() {
		return false
	}
	a = a.Unmap().WithZone("")
	for _, pfx := range p {
		if pfx.Contains(a) {
			return true
		}
	}
	return false
}

// ClientAddr is the address of the request's client: its peer, or, when the
// peer is a trusted proxy, the rightmost address of X-Forwarded-For that is
// not a trusted proxy (each proxy appends the address it got the request
// from, so everything left of the first untrusted one may be made up by the
// client). An unparsable hop stops the walk at the last trusted one.
func (p Proxies) ClientAddr(r *http.Request) netip.Addr {
	addr := peer(r)
	if !p.Trusts(addr) {
		return addr
	}
	hops := headerList(r.Header, "X-Forwarded-For")
	for i := len(hops) - 1; i >= 0; i-- {
		a, ok := parseHop(hops[i])
		if !ok {
			return addr
		}
		addr = a
		if !p.Trusts(a) {
			return a
		}
	}
	return addr
}

// HTTPS reports whether the browser reached the console over https: the
// request came over TLS, or a trusted proxy says so in X-Forwarded-Proto
// (its first value: what the first proxy was asked with).
func (p Proxies) HTTPS(r *http.Request) bool {
	if r.TLS != nil {
		return true
	}
	if !p.Trusts(peer(r)) {
		return false
	}
	hops := headerList(r.Header, "X-Forwarded-Proto")
	return len(hops) > 0 && strings.EqualFold(hops[0], "https")
}

// Host is the host the browser asked for: the request's Host, or a trusted
// proxy's X-Forwarded-Host (its first value) when it sends one.
func (p Proxies) Host(r *http.Request) string {
	if p.Trusts(peer(r)) {
		if hops := headerList(r.Header, "X-Forwarded-Host"); len(hops) > 0 && hops[0] != "" {
			return hops[0]
		}
	}
	return r.Host
}

// peer is the address the request's connection came from.
func peer(r *http.Request) netip.Addr {
	if ap, err := netip.ParseAddrPort(r.RemoteAddr); err == nil {
		return ap.Addr().Unmap().WithZone("")
	}
	a, _ := parseHop(r.RemoteAddr)
	return a
}

// parseHop reads one X-Forwarded-For entry: an address, possibly with a port
// or in brackets.
func parseHop(s string) (netip.Addr, bool) {
	s = strings.TrimSpace(s)
	if a, err := netip.ParseAddr(strings.TrimSuffix(strings.TrimPrefix(s, "["), "]")); err == nil {
		return a.Unmap().WithZone(""), true
	}
	if ap, err := netip.ParseAddrPort(s); err == nil {
		return ap.Addr().Unmap().WithZone(""), true
	}
	return netip.Addr{}, false
}

// headerList is the comma-separated values of every name header, in order.
func headerList(h http.Header, name string) []string {
	var out []string
	for _, v := range h.Values(name) {
		for _, part := range strings.Split(v, ",") {
			out = append(out, strings.TrimSpace(part))
		}
	}
	return out
}

// CookieMode decides the Secure attribute of the console's cookies.
type CookieMode string

// The cookie modes (--secure-cookies).
const (
	// CookiesAuto marks cookies Secure when the browser reached the console
	// over https (TLS, or a trusted proxy's X-Forwarded-Proto). The zero
	// value means auto.
	CookiesAuto CookieMode = "auto"
	// CookiesAlways always marks them Secure (a console served over https by
	// a proxy that is not listed in --trusted-proxy).
	CookiesAlways CookieMode = "always"
	// CookiesNever never does (plain-http set-ups that need it; not advised).
	CookiesNever CookieMode = "never"
)

// ParseCookieMode reads a --secure-cookies value.
func ParseCookieMode(s string) (CookieMode, error) {
	switch m := CookieMode(strings.ToLower(strings.TrimSpace(s))); m {
	case "", CookiesAuto:
		return CookiesAuto, nil
	case CookiesAlways, CookiesNever:
		return m, nil
	}
	return "", fmt.Errorf("secure cookies %q: want auto, always or never", s)
}
