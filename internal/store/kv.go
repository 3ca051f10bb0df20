package store

import (
	"context"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

func checkKV(bucket, key string) error {
	if err := checkSegment("bucket", bucket); err != nil {
		return apierrors.NewBadRequest(err.Error())
	}
	if key == "" {
		return apierrors.NewBadRequest("key is required")
	}
	return nil
}

func kvMutation(op opKind, bucket, key string) *mutation {
	return &mutation{op: op, resource: bucket, name: key, key: kvKey(bucket, key)}
}

// PutKV stores val under bucket/key in the side table; it returns once the
// value is synced to disk. The side table does not produce events.
func (s *Store) PutKV(ctx context.Context, bucket, key string, val []byte) error {
	return s.PutKVs(ctx, KVPut{Bucket: bucket, Key: key, Value: val})
}

// KVPut is one value of PutKVs.
type KVPut struct {
	Bucket, Key string
	Value       []byte
}

// PutKVs stores every value in the side table atomically (all of them or none,
// also across a crash) and returns once they are synced.
func (s *Store) PutKVs(ctx context.Context, puts ...KVPut) error {
	if len(puts) == 0 {
		return nil
	}
	for _, p := range puts {
		if err := checkKV(p.Bucket, p.Key); err != nil {
			return err
		}
	}
	m := kvMutation(opPutKV, puts[0].Bucket, puts[0].Key)
	m.val = append([]byte{}, puts[0].Value...)
	for _, p := range puts[1:] {
		m.more = append(m.more, kvPair{key: kvKey(p.Bucket, p.Key), val: append([]byte{}, p.Value...)})
	}
	return s.submit(ctx, m)
}

// GetKV returns the value under bucket/key, or a NotFound error. The read is
// ordered with writes: it observes every write acknowledged before it began
// and returns only durable values.
func (s *Store) GetKV(ctx context.Context, bucket, key string) ([]byte, error) {
	if err := checkKV(bucket, key); err != nil {
		return nil, err
	}
	m := kvMutation(opGetKV, bucket, key)
	if err := s.submit(ctx, m); err != nil {
		return nil, err
	}
	return m.outVal, nil
}

// TakeKV atomically returns and deletes the value under bucket/key (single
// use); of concurrent callers exactly one gets the value, the others get
// NotFound. The deletion is synced before it returns.
func (s *Store) TakeKV(ctx context.Context, bucket, key string) ([]byte, error) {
	if err := checkKV(bucket, key); err != nil {
		return nil, err
	}
	m := kvMutation(opTakeKV, bucket, key)
	if err := s.submit(ctx, m); err != nil {
		return nil, err
	}
	return m.outVal, nil
}

// DeleteKV removes bucket/key (synced). Deleting an absent key is not an
// error.
func (s *Store) DeleteKV(ctx context.Context, bucket, key string) error {
	if err := checkKV(bucket, key); err != nil {
		return err
	}
	return s.submit(ctx, kvMutation(opDeleteKV, bucket, key))
}
