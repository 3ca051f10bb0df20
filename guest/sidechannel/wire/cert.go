package wire

import (
	"crypto/ed25519"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/hex"
	"errors"
	"fmt"
	"math/big"
	"strings"
	"time"
)

// FingerprintPrefix starts every fingerprint string.
const FingerprintPrefix = "sha256:"

// Errors returned by PeerFingerprint.
var (
	// ErrNoPeerCert means the peer presented no certificate.
	ErrNoPeerCert = errors.New("peer presented no certificate")
	// ErrBadPeerCert means the peer's certificate is not a single self-signed ed25519 certificate.
	ErrBadPeerCert = errors.New("peer certificate is not a single self-signed ed25519 certificate")
)

// Fingerprint returns "sha256:<hex>" of a DER-encoded SubjectPublicKeyInfo.
func Fingerprint(spki []byte) string {
	sum := sha256.Sum256(spki)
	return FingerprintPrefix + hex.EncodeToString(sum[:])
}

// KeyFingerprint returns the fingerprint of an ed25519 public key.
func KeyFingerprint(pub ed25519.PublicKey) (string, error) {
	spki, err := x509.MarshalPKIXPublicKey(pub)
	if err != nil {
		return "", fmt.Errorf("marshal public key: %w", err)
	}
	return Fingerprint(spki), nil
}

// ValidFingerprint reports whether s has the form "sha256:" followed by 64 lower-case hex digits.
func ValidFingerprint(s string) bool {
	h, ok := strings.CutPrefix(s, FingerprintPrefix)
	if !ok || len(h) != sha256.Size*2 {
		return false
	}
	_, err := hex.DecodeString(h)
	return err == nil && strings.ToLower(h) == h
}

// SameFingerprint compares two fingerprints in constant time.
func SameFingerprint(a, b string) bool {
	return subtle.ConstantTimeCompare([]byte(a), []byte(b)) == 1
}

// SelfSigned builds a TLS certificate for key: self-signed, ed25519, valid from an hour ago for ten years. Only
// its public key matters to the peer, which pins the fingerprint; names and dates are informational.
func SelfSigned(key ed25519.PrivateKey, commonName string) (tls.Certificate, error) {
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 126))
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("certificate serial: %w", err)
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               pkix.Name{CommonName: commonName},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.AddDate(10, 0, 0),
		KeyUsage:              x509.KeyUsageDigitalSignature,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
		BasicConstraintsValid: true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("create certificate: %w", err)
	}
	leaf, err := x509.ParseCertificate(der)
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("parse certificate: %w", err)
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key, Leaf: leaf}, nil
}

// PeerFingerprint checks that the handshake's peer presented exactly one self-signed ed25519 certificate and
// returns its fingerprint. The TLS 1.3 CertificateVerify message already proved the peer holds the private key.
func PeerFingerprint(cs tls.ConnectionState) (string, error) {
	if len(cs.PeerCertificates) == 0 {
		return "", ErrNoPeerCert
	}
	if len(cs.PeerCertificates) != 1 {
		return "", fmt.Errorf("%w: chain of %d", ErrBadPeerCert, len(cs.PeerCertificates))
	}
	cert := cs.PeerCertificates[0]
	if _, ok := cert.PublicKey.(ed25519.PublicKey); !ok {
		return "", fmt.Errorf("%w: key type %T", ErrBadPeerCert, cert.PublicKey)
	}
	// Self-signature only (CheckSignatureFrom would demand CA bits): the key signed its own certificate.
	if err := cert.CheckSignature(cert.SignatureAlgorithm, cert.RawTBSCertificate, cert.Signature); err != nil {
		return "", fmt.Errorf("%w: %w", ErrBadPeerCert, err)
	}
	return Fingerprint(cert.RawSubjectPublicKeyInfo), nil
}
