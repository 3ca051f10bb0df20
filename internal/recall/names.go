package recall

import (
	"errors"
	"fmt"
	"regexp"
	"strings"
)

// ErrInvalid is wrapped by the errors refusing bad input: a malformed name,
// an empty document or query.
var ErrInvalid = errors.New("invalid")

// kvBucket is the store side-table bucket that holds all recall documents.
const kvBucket = "recall"

// nameRE limits namespace, agent, bucket and document-ID segments to
// characters that are safe both as side-table key segments and as directory
// names (no '/', no leading '.').
var nameRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,252}$`)

// bucketRE is a Grant's spec.recall[].name pattern (a DNS label), so that
// every bucket can be granted.
var bucketRE = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$`)

// BucketRef names one recall bucket of one agent.
type BucketRef struct {
	Namespace string
	Agent     string
	Bucket    string
}

func (r BucketRef) String() string {
	return r.Namespace + "/" + r.Agent + "/" + r.Bucket
}

func checkName(what, v string) error {
	if v == "" {
		return fmt.Errorf("recall: %s is required: %w", what, ErrInvalid)
	}
	if !nameRE.MatchString(v) {
		return fmt.Errorf("recall: %s %q must match %s: %w", what, v, nameRE, ErrInvalid)
	}
	return nil
}

func (r BucketRef) validate() error {
	if err := checkAgent(r.Namespace, r.Agent); err != nil {
		return err
	}
	return checkBucket(r.Bucket)
}

func checkBucket(v string) error {
	if !bucketRE.MatchString(v) {
		return fmt.Errorf("recall: bucket name %q must be a DNS label (lower-case letters, digits and '-', at most 63, "+
			"as a Grant's spec.recall[].name): %w", v, ErrInvalid)
	}
	return nil
}

func checkAgent(namespace, agent string) error {
	if err := checkName("namespace", namespace); err != nil {
		return err
	}
	return checkName("agent", agent)
}

// CheckName reports whether v is a valid document ID (an error wrapping
// ErrInvalid when it is not).
func CheckName(what, v string) error { return checkName(what, v) }

// CheckBucket reports whether v is a valid bucket name (an error wrapping
// ErrInvalid when it is not).
func CheckBucket(v string) error { return checkBucket(v) }

// prefix is the side-table key prefix of the bucket's documents.
func (r BucketRef) prefix() string { return r.String() + "/" }

func (r BucketRef) key(id string) string { return r.prefix() + id }

func idFromKey(r BucketRef, key string) string { return strings.TrimPrefix(key, r.prefix()) }
