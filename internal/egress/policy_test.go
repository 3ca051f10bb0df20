package egress_test

import (
	"errors"
	"testing"

	"aicli.dev/aicli/apis/v1alpha1"
	"aicli.dev/aicli/guest/egress/egresswire"
	"aicli.dev/aicli/internal/egress"
)

func TestParseRule(t *testing.T) {
	good := map[string]egress.Rule{
		"example.com":         {Host: "example.com"},
		"Example.COM.":        {Host: "example.com"},
		"example.com:8443":    {Host: "example.com", Port: 8443},
		"*.example.com":       {Host: "example.com", Wildcard: true},
		"*.example.com:443":   {Host: "example.com", Wildcard: true, Port: 443},
		"127.0.0.1":           {Host: "127.0.0.1"},
		"127.0.0.1:9":         {Host: "127.0.0.1", Port: 9},
		"[::1]:80":            {Host: "::1", Port: 80},
		"registry.npmjs-x.io": {Host: "registry.npmjs-x.io"},
	}
	for in, want := range good {
		got, err := egress.ParseRule(in)
		if err != nil || got != want {
			t.Errorf("ParseRule(%q) = %+v, %v; want %+v", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "*", "*.com", "*.127.0.0.1", "a b", "exa$mple.com", "example.com:0",
		"example.com:65536", "example.com:http", "-a.com", "a..com", "http://example.com", "example.com/path"} {
		if r, err := egress.ParseRule(bad); err == nil {
			t.Errorf("ParseRule(%q) accepted as %+v", bad, r)
		}
	}
}

func TestCheckTarget(t *testing.T) {
	p, err := egress.NewPolicy("https://api.provider.test/v1", []string{
		"github.com", "*.githubusercontent.com", "127.0.0.1:5000", "pkg.test:8080",
	})
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		target string
		reason egresswire.Reason // empty: allowed
	}{
		{"api.provider.test:443", ""}, // the provider endpoint is reachable by tunnel too
		{"API.Provider.Test.:443", ""},
		{"api.provider.test:80", egresswire.ReasonPortNotAllowed},
		{"github.com:443", ""},
		{"github.com:80", ""},
		{"github.com:22", egresswire.ReasonPortNotAllowed},
		{"www.github.com:443", egresswire.ReasonHostNotAllowed},
		{"raw.githubusercontent.com:443", ""},
		{"a.b.githubusercontent.com:443", ""},
		{"githubusercontent.com:443", egresswire.ReasonHostNotAllowed},
		{"evilgithubusercontent.com:443", egresswire.ReasonHostNotAllowed},
		{"127.0.0.1:5000", ""},
		{"[::ffff:127.0.0.1]:5000", ""}, // the mapped form is the same address, dialed canonically
		{"127.0.0.1:5001", egresswire.ReasonPortNotAllowed},
		{"[::1]:5000", egresswire.ReasonHostNotAllowed},
		{"localhost:5000", egresswire.ReasonHostNotAllowed},
		{"pkg.test:8080", ""},
		{"pkg.test:443", egresswire.ReasonPortNotAllowed},
		{"github.com", egresswire.ReasonMalformedHeader},
		{"github.com:0", egresswire.ReasonMalformedHeader},
		{"bad host:443", egresswire.ReasonMalformedHeader},
	}
	for _, tc := range cases {
		host, port, err := p.CheckTarget(tc.target)
		if tc.reason == "" {
			if err != nil {
				t.Errorf("%s: %v", tc.target, err)
			} else if host == "" || port == 0 {
				t.Errorf("%s: allowed as %q %d", tc.target, host, port)
			}
			continue
		}
		var d *egress.Denial
		if !errors.As(err, &d) || d.Reason != tc.reason {
			t.Errorf("%s: %v, want %s", tc.target, err, tc.reason)
		}
	}
	if h, _, _ := p.CheckTarget("[::ffff:127.0.0.1]:5000"); h != "127.0.0.1" {
		t.Errorf("mapped address canonicalised to %q", h)
	}
	var zero egress.Policy
	if _, _, err := zero.CheckTarget("github.com:443"); err == nil {
		t.Error("the zero policy allowed a target")
	}
}

func TestNewPolicyRejects(t *testing.T) {
	for _, tc := range []struct {
		provider string
		allow    []string
	}{
		{"ftp://x.test", nil},
		{"https://user:pw@x.test", nil},
		{"https://", nil},
		{"", []string{"ok.test", "*.bad"}},
	} {
		if _, err := egress.NewPolicy(tc.provider, tc.allow); err == nil {
			t.Errorf("NewPolicy(%q, %v) accepted", tc.provider, tc.allow)
		}
	}
}

func TestAgentPolicy(t *testing.T) {
	p, err := egress.AgentPolicy(v1alpha1.AgentSpec{
		Harness:  "claude",
		Provider: v1alpha1.ProviderSpec{Endpoint: "http://127.0.0.1:8081"},
		Egress:   &v1alpha1.EgressPolicy{Allow: []string{"*.npmjs.test", "git.test:22"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	for target, ok := range map[string]bool{
		"127.0.0.1:8081": true, "registry.npmjs.test:443": true, "git.test:22": true,
		"git.test:443": false, "127.0.0.1:8082": false,
	} {
		if _, _, err := p.CheckTarget(target); (err == nil) != ok {
			t.Errorf("%s: %v, want allowed=%v", target, err, ok)
		}
	}
	none, err := egress.AgentPolicy(v1alpha1.AgentSpec{Harness: "fake"})
	if err != nil || none.Provider != nil || len(none.Allow) != 0 {
		t.Fatalf("empty spec: %+v %v", none, err)
	}
	if _, err := egress.AgentPolicy(v1alpha1.AgentSpec{Egress: &v1alpha1.EgressPolicy{Allow: []string{"*.x"}}}); err == nil {
		t.Fatal("a bad allow entry was accepted")
	}
}
