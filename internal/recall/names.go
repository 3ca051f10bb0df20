package recall

import (
	"fmt"
	"regexp"
	"strings"
)

// kvBucket is the store side-table bucket that holds all recall documents.
const kvBucket = "recall"

// nameRE limits namespace, agent, bucket and document-ID segments to
// characters that are safe both as side-table key segments and as directory
// names (no '/', no leading '.').
var nameRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,252}$`)

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
		return fmt.Errorf("recall: %s is required", what)
	}
	if !nameRE.MatchString(v) {
		return fmt.Errorf("recall: %s %q must match %s", what, v, nameRE)
	}
	return nil
}

func (r BucketRef) validate() error {
	if err := checkName("namespace", r.Namespace); err != nil {
		return err
	}
	if err := checkName("agent", r.Agent); err != nil {
		return err
	}
	return checkName("bucket", r.Bucket)
}

// prefix is the side-table key prefix of the bucket's documents.
func (r BucketRef) prefix() string { return r.String() + "/" }

func (r BucketRef) key(id string) string { return r.prefix() + id }

func idFromKey(r BucketRef, key string) string { return strings.TrimPrefix(key, r.prefix()) }
