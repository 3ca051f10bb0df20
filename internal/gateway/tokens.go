package gateway

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"aicli.dev/aicli/guest/sidechannel/wire"
)

// Token store buckets.
const (
	bucketLaunch    = "gateway-launch"
	bucketReconnect = "gateway-reconnect"
)

// TokenStore is the durable single-use KV seam the gateway keeps launch tokens and reconnect records in. The
// supervisor backs it by its pebble store's synced KV side table. TakeKV must be an atomic get+delete and return an
// error for which apierrors.IsNotFound is true when the key is absent.
type TokenStore interface {
	PutKV(ctx context.Context, bucket, key string, val []byte) error
	TakeKV(ctx context.Context, bucket, key string) ([]byte, error)
}

// launchRecord is what the store holds for one launch token, keyed by the token's SHA-256.
type launchRecord struct {
	ConversationID string    `json:"conversationId"`
	ExpiresAt      time.Time `json:"expiresAt"`
}

// reconnectRecord binds a conversation to the admitted guest key and the hash of its reconnect secret.
type reconnectRecord struct {
	GuestFingerprint string    `json:"guestFingerprint"`
	SecretSHA256     string    `json:"secretSha256"`
	AdmittedAt       time.Time `json:"admittedAt"`
}

// newSecret returns 32 random bytes, base64url-encoded without padding.
func newSecret() (string, error) {
	var b [32]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("random secret: %w", err)
	}
	return base64.RawURLEncoding.EncodeToString(b[:]), nil
}

// hashSecret is the hex SHA-256 under which a token or secret is stored; the raw value never is.
func hashSecret(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}

// refusal is a handshake outcome that refuses the guest.
type refusal struct {
	reason wire.Reason
	msg    string // sent to the guest and logged; never contains a secret
	err    error  // logged only
}

func refuse(reason wire.Reason, msg string, err error) *refusal {
	return &refusal{reason: reason, msg: msg, err: err}
}

// spendLaunchToken atomically spends token and checks it was issued for convID and has not expired.
func (g *Gateway) spendLaunchToken(ctx context.Context, convID, token string) *refusal {
	raw, err := g.opts.Tokens.TakeKV(ctx, bucketLaunch, hashSecret(token))
	if apierrors.IsNotFound(err) {
		return refuse(wire.ReasonTokenUnknown, "launch token unknown or already used", nil)
	}
	if err != nil {
		return refuse(wire.ReasonUnavailable, "token store unavailable", fmt.Errorf("spend launch token: %w", err))
	}
	var rec launchRecord
	if err := json.Unmarshal(raw, &rec); err != nil {
		return refuse(wire.ReasonTokenUnknown, "launch token record unreadable", fmt.Errorf("decode launch record: %w", err))
	}
	if rec.ConversationID != convID {
		return refuse(wire.ReasonConversationMismatch, "launch token was issued for another conversation", nil)
	}
	if !g.opts.Clock().Before(rec.ExpiresAt) {
		return refuse(wire.ReasonTokenExpired, "launch token expired", nil)
	}
	return nil
}

// bindGuest records fp as the conversation's guest key with a fresh reconnect secret, which it returns.
func (g *Gateway) bindGuest(ctx context.Context, convID, fp string) (string, *refusal) {
	secret, err := newSecret()
	if err != nil {
		return "", refuse(wire.ReasonUnavailable, "cannot mint reconnect secret", err)
	}
	rec, err := json.Marshal(reconnectRecord{GuestFingerprint: fp, SecretSHA256: hashSecret(secret), AdmittedAt: g.opts.Clock().UTC()})
	if err != nil {
		return "", refuse(wire.ReasonUnavailable, "cannot encode reconnect record", err)
	}
	if err := g.opts.Tokens.PutKV(ctx, bucketReconnect, convID, rec); err != nil {
		return "", refuse(wire.ReasonUnavailable, "token store unavailable", fmt.Errorf("store reconnect record: %w", err))
	}
	return secret, nil
}

// checkReconnect verifies that fp and secret match the conversation's reconnect record. The record is taken
// (so concurrent attempts serialise on the store too) and always put back unchanged.
func (g *Gateway) checkReconnect(ctx context.Context, convID, fp, secret string) *refusal {
	raw, err := g.opts.Tokens.TakeKV(ctx, bucketReconnect, convID)
	if apierrors.IsNotFound(err) {
		return refuse(wire.ReasonReconnectRefused, "no reconnectable guest for this conversation", nil)
	}
	if err != nil {
		return refuse(wire.ReasonUnavailable, "token store unavailable", fmt.Errorf("read reconnect record: %w", err))
	}
	if err := g.opts.Tokens.PutKV(ctx, bucketReconnect, convID, raw); err != nil {
		return refuse(wire.ReasonUnavailable, "token store unavailable", fmt.Errorf("restore reconnect record: %w", err))
	}
	var rec reconnectRecord
	if err := json.Unmarshal(raw, &rec); err != nil {
		return refuse(wire.ReasonReconnectRefused, "reconnect record unreadable", fmt.Errorf("decode reconnect record: %w", err))
	}
	fpOK := wire.SameFingerprint(rec.GuestFingerprint, fp)
	secretOK := subtle.ConstantTimeCompare([]byte(rec.SecretSHA256), []byte(hashSecret(secret))) == 1
	if !fpOK || !secretOK {
		return refuse(wire.ReasonReconnectRefused, "reconnect credentials do not match this conversation's guest",
			fmt.Errorf("key matches: %t, secret matches: %t", fpOK, secretOK))
	}
	return nil
}

// issueLaunchToken stores the hash of a fresh token for convID and returns the token and its expiry.
func (g *Gateway) issueLaunchToken(ctx context.Context, convID string) (token, hash string, expires time.Time, err error) {
	token, err = newSecret()
	if err != nil {
		return "", "", time.Time{}, err
	}
	expires = g.opts.Clock().Add(g.opts.TokenTTL).UTC()
	rec, err := json.Marshal(launchRecord{ConversationID: convID, ExpiresAt: expires})
	if err != nil {
		return "", "", time.Time{}, fmt.Errorf("encode launch record: %w", err)
	}
	hash = hashSecret(token)
	if err := g.opts.Tokens.PutKV(ctx, bucketLaunch, hash, rec); err != nil {
		return "", "", time.Time{}, fmt.Errorf("store launch token: %w", err)
	}
	return token, hash, expires, nil
}

// forget removes a key from the store, treating absence as success.
func (g *Gateway) forget(ctx context.Context, bucket, key string) error {
	if _, err := g.opts.Tokens.TakeKV(ctx, bucket, key); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("delete %s record: %w", bucket, err)
	}
	return nil
}
