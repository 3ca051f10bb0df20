// Package gatewaytest holds test doubles for the side-channel gateway's seams.
package gatewaytest

import (
	"bytes"
	"context"
	"sync"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Tokens is an in-memory gateway.TokenStore (the seam the supervisor backs
// with its store): TakeKV is an atomic get and delete and reports absence as
// NotFound. Safe for concurrent use.
type Tokens struct {
	mu sync.Mutex
	kv map[string][]byte
}

// NewTokens returns an empty Tokens.
func NewTokens() *Tokens { return &Tokens{kv: map[string][]byte{}} }

// PutKV implements gateway.TokenStore.
func (m *Tokens) PutKV(_ context.Context, bucket, key string, val []byte) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.kv[bucket+"/"+key] = bytes.Clone(val)
	return nil
}

// TakeKV implements gateway.TokenStore.
func (m *Tokens) TakeKV(_ context.Context, bucket, key string) ([]byte, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	v, ok := m.kv[bucket+"/"+key]
	if !ok {
		return nil, apierrors.NewNotFound(schema.GroupResource{Group: "aicli.dev", Resource: "kv"}, bucket+"/"+key)
	}
	delete(m.kv, bucket+"/"+key)
	return v, nil
}
