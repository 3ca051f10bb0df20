package remote

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"aicli.dev/aicli/apis/v1alpha1"
	"aicli.dev/aicli/internal/client"
	"aicli.dev/aicli/internal/secrets"
)

// Secrets reads supervisor-held secrets (secrets.Store).
type Secrets interface {
	Get(namespace, name string) ([]byte, error)
}

// DefaultTimeout bounds one non-streaming request to a remote supervisor.
const DefaultTimeout = 10 * time.Second

// Dialer opens the target sides of remote attachments. It keeps one client
// per remote supervisor and secret versions: a changed token or CA makes a
// new client and closes the old one. Safe for concurrent use.
type Dialer struct {
	Secrets Secrets
	Logger  *slog.Logger
	// Timeout bounds each non-streaming request (default DefaultTimeout).
	Timeout time.Duration

	mu      sync.Mutex
	clients map[string]cached
}

type cached struct {
	version string
	client  *client.Client
}

// SecretError says that a Secret the attachment names cannot be used; Field
// is its spec field.
type SecretError struct {
	Field, Namespace, Name string
	Err                    error
}

func (e *SecretError) Error() string {
	if errors.Is(e.Err, secrets.ErrNotFound) {
		return fmt.Sprintf("%s: Secret %q does not exist in namespace %q (store it with aictl secret set)", e.Field, e.Name, e.Namespace)
	}
	return fmt.Sprintf("%s: Secret %q in namespace %q: %v", e.Field, e.Name, e.Namespace, e.Err)
}

func (e *SecretError) Unwrap() error { return e.Err }

// Namespace is the remote namespace of an attachment in namespace ns:
// spec.target.supervisor.namespace, or the attachment's own.
func Namespace(ns string, rs *v1alpha1.RemoteSupervisor) string {
	if rs.Namespace != "" {
		return rs.Namespace
	}
	return ns
}

// Side returns the target side of an attachment in namespace ns whose target
// is on rs. The token (and CA) are read from the Secrets in ns; they are
// never logged.
func (d *Dialer) Side(ns string, rs *v1alpha1.RemoteSupervisor) (*Side, error) {
	token, err := d.secret(ns, rs.TokenSecret, "spec.target.supervisor.tokenSecret")
	if err != nil {
		return nil, err
	}
	var ca []byte
	if rs.CASecret != "" {
		if ca, err = d.secret(ns, rs.CASecret, "spec.target.supervisor.caSecret"); err != nil {
			return nil, err
		}
	}
	c, err := d.client(ns, rs, strings.TrimSpace(string(token)), ca)
	if err != nil {
		return nil, err
	}
	log := d.Logger
	if log == nil {
		log = slog.Default()
	}
	return &Side{c: c, ns: Namespace(ns, rs), address: rs.Address, log: log}, nil
}

func (d *Dialer) secret(ns, name, field string) ([]byte, error) {
	v, err := d.Secrets.Get(ns, name)
	if err != nil {
		return nil, &SecretError{Field: field, Namespace: ns, Name: name, Err: err}
	}
	return v, nil
}

// client returns the cached client of (address, secrets) at these secret
// versions, building it on first use.
func (d *Dialer) client(ns string, rs *v1alpha1.RemoteSupervisor, token string, ca []byte) (*client.Client, error) {
	key := strings.Join([]string{rs.Address, ns, rs.TokenSecret, rs.CASecret}, "\x00")
	sum := sha256.New()
	sum.Write([]byte(token))
	sum.Write([]byte{0})
	sum.Write(ca)
	version := hex.EncodeToString(sum.Sum(nil))
	d.mu.Lock()
	defer d.mu.Unlock()
	if c, ok := d.clients[key]; ok && c.version == version {
		return c.client, nil
	}
	timeout := d.Timeout
	if timeout == 0 {
		timeout = DefaultTimeout
	}
	c, err := client.New(client.Config{Server: rs.Address, Token: token, CAData: ca, Timeout: timeout})
	if err != nil {
		return nil, fmt.Errorf("spec.target.supervisor.address: %w", err)
	}
	if d.clients == nil {
		d.clients = map[string]cached{}
	}
	if old, ok := d.clients[key]; ok {
		old.client.Close()
	}
	d.clients[key] = cached{version: version, client: c}
	return c, nil
}
