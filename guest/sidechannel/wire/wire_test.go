package wire_test

import (
	"bytes"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"strings"
	"testing"

	"aicli.dev/aicli/guest/sidechannel/wire"
)

func TestFrameRoundTrip(t *testing.T) {
	var buf bytes.Buffer
	in := wire.Hello{ConversationID: "c", LaunchToken: "t"}
	if err := wire.WriteFrame(&buf, in); err != nil {
		t.Fatal(err)
	}
	buf.WriteString("next bytes belong to yamux")
	var out wire.Hello
	if err := wire.ReadFrame(&buf, &out); err != nil || out != in {
		t.Fatalf("got %+v err %v", out, err)
	}
	if buf.String() != "next bytes belong to yamux" {
		t.Fatalf("ReadFrame consumed past its frame: %q left", buf.String())
	}
}

func TestFrameRejects(t *testing.T) {
	cases := map[string][]byte{
		"oversize header": {0, 1, 0, 0},
		"short body":      {0, 0, 0, 10, '{'},
		"unknown field":   append([]byte{0, 0, 0, 12}, `{"admin":1} `...),
		"trailing value":  append([]byte{0, 0, 0, 4}, `{}{}`...),
		"empty":           {},
	}
	for name, data := range cases {
		var h wire.Hello
		if err := wire.ReadFrame(bytes.NewReader(data), &h); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	var h wire.Hello
	if err := wire.ReadFrame(bytes.NewReader([]byte{0, 1, 0, 0}), &h); !errors.Is(err, wire.ErrFrameTooLarge) {
		t.Errorf("oversize: %v", err)
	}
	if err := wire.WriteFrame(&bytes.Buffer{}, wire.Hello{LaunchToken: strings.Repeat("x", wire.MaxFrame)}); !errors.Is(err, wire.ErrFrameTooLarge) {
		t.Errorf("oversize write: %v", err)
	}
}

func TestFingerprints(t *testing.T) {
	pub, key, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := wire.SelfSigned(key, "x")
	if err != nil {
		t.Fatal(err)
	}
	fp, err := wire.KeyFingerprint(pub)
	if err != nil {
		t.Fatal(err)
	}
	if !wire.ValidFingerprint(fp) || fp != wire.Fingerprint(cert.Leaf.RawSubjectPublicKeyInfo) {
		t.Fatalf("fingerprint %q", fp)
	}
	got, err := wire.PeerFingerprint(tls.ConnectionState{PeerCertificates: []*x509.Certificate{cert.Leaf}})
	if err != nil || got != fp {
		t.Fatalf("PeerFingerprint %q %v", got, err)
	}
	if _, err := wire.PeerFingerprint(tls.ConnectionState{}); !errors.Is(err, wire.ErrNoPeerCert) {
		t.Fatalf("no cert: %v", err)
	}
	if _, err := wire.PeerFingerprint(tls.ConnectionState{PeerCertificates: []*x509.Certificate{cert.Leaf, cert.Leaf}}); !errors.Is(err, wire.ErrBadPeerCert) {
		t.Fatalf("chain: %v", err)
	}
	// A certificate whose signature does not verify under its own key (last signature byte flipped).
	forged := bytes.Clone(cert.Leaf.Raw)
	forged[len(forged)-1] ^= 0xff
	fc, err := x509.ParseCertificate(forged)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := wire.PeerFingerprint(tls.ConnectionState{PeerCertificates: []*x509.Certificate{fc}}); !errors.Is(err, wire.ErrBadPeerCert) {
		t.Fatalf("not self-signed: %v", err)
	}
	for _, bad := range []string{"", "sha256:", "sha1:" + fp[7:], strings.ToUpper(fp), fp + "00", fp[:len(fp)-1] + "g"} {
		if wire.ValidFingerprint(bad) {
			t.Errorf("ValidFingerprint(%q) = true", bad)
		}
	}
	if !wire.SameFingerprint(fp, fp) || wire.SameFingerprint(fp, wire.Fingerprint([]byte("other"))) {
		t.Error("SameFingerprint")
	}
}
