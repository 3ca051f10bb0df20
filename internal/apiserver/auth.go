package apiserver

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/validation"
	"sigs.k8s.io/yaml"
)

// Principal is who is calling. Namespaces nil means every namespace.
type Principal struct {
	Name       string
	Namespaces []string
	// Role is what the principal may do in its namespaces ("" is RoleEdit).
	Role Role
	// Monitors are the monitor agents the caller may speak as in a send
	// (the remote monitors of Token.Monitors).
	Monitors []string
}

// MaySpeakAs reports whether the principal's credential names monitor.
func (p *Principal) MaySpeakAs(monitor string) bool { return slices.Contains(p.Monitors, monitor) }

// AllNamespaces reports whether the principal may touch every namespace.
func (p *Principal) AllNamespaces() bool { return p.Namespaces == nil }

// Allowed reports whether the principal may touch namespace ns.
func (p *Principal) Allowed(ns string) bool {
	return p.AllNamespaces() || slices.Contains(p.Namespaces, ns)
}

// IsClusterAdmin reports whether the principal may do anything anywhere.
func (p *Principal) IsClusterAdmin() bool { return p.Role == RoleClusterAdmin && p.AllNamespaces() }

func (p *Principal) role() Role {
	if p.Role == "" {
		return RoleEdit
	}
	return p.Role
}

// describe names the principal in a refusal: its name, role and namespaces.
func (p *Principal) describe() string {
	ns := "all namespaces"
	if !p.AllNamespaces() {
		ns = "namespaces " + strings.Join(p.Namespaces, ", ")
	}
	return fmt.Sprintf("token %q (role %s in %s)", p.Name, p.role(), ns)
}

// LocalAdmin is the principal of every request on the unix socket, which only
// the socket's owner can open (mode 0600): a cluster admin.
var LocalAdmin = &Principal{Name: "local-admin", Role: RoleClusterAdmin}

type principalKey struct{}

// WithPrincipal marks ctx as authenticated as p.
func WithPrincipal(ctx context.Context, p *Principal) context.Context {
	return context.WithValue(ctx, principalKey{}, p)
}

// PrincipalFrom returns the caller of an authenticated request.
func PrincipalFrom(ctx context.Context) (*Principal, bool) {
	p, ok := ctx.Value(principalKey{}).(*Principal)
	return p, ok
}

// Token is one bearer token entry: the SHA-256 of the token, never the token.
type Token struct {
	// Name identifies the token holder in logs.
	Name string `json:"name"`
	// SHA256 is the hex SHA-256 of the raw token.
	SHA256 string `json:"sha256"`
	// Namespaces the token may touch; ["*"] means all.
	Namespaces []string `json:"namespaces"`
	// Role is view, edit, admin or cluster-admin (which needs namespaces
	// ["*"]); empty is edit, the rights every token had before roles.
	Role string `json:"role,omitempty"`
	// Monitors are the monitor agents the holder may speak as: a send naming
	// one of them is delivered as that monitor's advice (a remote monitor's
	// home supervisor holds such a token; docs/monitors.md).
	Monitors []string `json:"monitors,omitempty"`
}

// TokenFile is the on-disk list of bearer tokens.
type TokenFile struct {
	Tokens []Token `json:"tokens"`
}

// HashToken returns the hex SHA-256 of a raw token.
func HashToken(raw string) string {
	sum := sha256.Sum256([]byte(raw))
	return hex.EncodeToString(sum[:])
}

// LoadTokens reads a token file; a missing file yields no tokens.
func LoadTokens(path string) (*TokenFile, error) {
	data, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		return &TokenFile{}, nil
	}
	if err != nil {
		return nil, err
	}
	var tf TokenFile
	if err := yaml.UnmarshalStrict(data, &tf); err != nil {
		return nil, fmt.Errorf("token file %s: %w", path, err)
	}
	for i, t := range tf.Tokens {
		if len(t.SHA256) != 64 {
			return nil, fmt.Errorf("token file %s: tokens[%d].sha256 must be 64 hex characters", path, i)
		}
		if len(t.Namespaces) == 0 {
			return nil, fmt.Errorf("token file %s: tokens[%d].namespaces must name at least one namespace or \"*\"", path, i)
		}
		if err := t.Validate(); err != nil {
			return nil, fmt.Errorf("token file %s: tokens[%d]: %w", path, i, err)
		}
	}
	return &tf, nil
}

// Validate checks the token's role against its namespaces, and its monitor names.
func (t *Token) Validate() error {
	role, err := ParseRole(t.Role)
	if err != nil {
		return err
	}
	for j, m := range t.Monitors {
		if msgs := validation.IsDNS1123Label(m); len(msgs) > 0 {
			return fmt.Errorf("monitors[%d] %q: %s", j, m, strings.Join(msgs, "; "))
		}
	}
	if role == RoleClusterAdmin && !slices.Equal(t.Namespaces, []string{"*"}) {
		return fmt.Errorf("role cluster-admin spans every namespace: its namespaces must be [\"*\"], not %v", t.Namespaces)
	}
	return nil
}

// Principal returns the principal the token authenticates as.
func (t *Token) Principal() *Principal {
	role, _ := ParseRole(t.Role)
	p := &Principal{Name: t.Name, Role: role, Monitors: append([]string(nil), t.Monitors...)}
	if !slices.Contains(t.Namespaces, "*") {
		p.Namespaces = append([]string{}, t.Namespaces...)
	}
	return p
}

// TokenAuthenticator authenticates bearer tokens against a token list.
type TokenAuthenticator struct {
	tokens atomic.Pointer[[]Token]
	// file, when set, is re-read when it changes (FileTokenAuthenticator).
	file  string
	mu    sync.Mutex
	seen  fileStamp
	check time.Time
	log   *slog.Logger
}

// fileStamp is what tells a changed token file.
type fileStamp struct {
	size    int64
	modTime time.Time
	ino     uint64 // a file replaced by rename (as token create writes it) is a new inode
	ok      bool
}

// tokenRecheck is how often a request looks whether the token file changed.
const tokenRecheck = time.Second

// NewTokenAuthenticator returns an authenticator over tf.
func NewTokenAuthenticator(tf *TokenFile) *TokenAuthenticator {
	a := &TokenAuthenticator{}
	a.tokens.Store(&tf.Tokens)
	return a
}

// FileTokenAuthenticator returns an authenticator over the token file at
// path, which it reads again within a second of a change: a token created or
// deleted (aicli-supervisor token create|delete) counts without a restart. A
// file that no longer reads is an error in the log and authenticates nobody
// until it is fixed: a revocation must not be undone by a typo.
func FileTokenAuthenticator(path string, log *slog.Logger) (*TokenAuthenticator, error) {
	tf, err := LoadTokens(path)
	if err != nil {
		return nil, err
	}
	a := NewTokenAuthenticator(tf)
	a.file, a.log, a.seen, a.check = path, log, stampOf(path), time.Now()
	return a, nil
}

func stampOf(path string) fileStamp {
	fi, err := os.Stat(path)
	if err != nil {
		return fileStamp{}
	}
	st := fileStamp{size: fi.Size(), modTime: fi.ModTime(), ok: true}
	if sys, ok := fi.Sys().(*syscall.Stat_t); ok {
		st.ino = sys.Ino
	}
	return st
}

// reload re-reads the token file when it changed since the last look (at most
// once per tokenRecheck).
func (a *TokenAuthenticator) reload() {
	if a.file == "" {
		return
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	now := time.Now()
	if now.Sub(a.check) < tokenRecheck {
		return
	}
	a.check = now
	st := stampOf(a.file)
	if st == a.seen {
		return
	}
	a.seen = st
	tf, err := LoadTokens(a.file)
	if err != nil {
		a.log.Error("token file no longer reads: no token is accepted until it is fixed", "file", a.file, "err", err)
		tf = &TokenFile{}
	} else {
		a.log.Info("token file reloaded", "file", a.file, "tokens", len(tf.Tokens))
	}
	a.tokens.Store(&tf.Tokens)
}

// Authenticate returns the principal of the request's bearer token, or a 401.
func (a *TokenAuthenticator) Authenticate(r *http.Request) (*Principal, error) {
	h := r.Header.Get("Authorization")
	raw, ok := strings.CutPrefix(h, "Bearer ")
	if !ok || raw == "" {
		return nil, apierrors.NewUnauthorized("a bearer token is required (Authorization: Bearer <token>)")
	}
	a.reload()
	sum := HashToken(strings.TrimSpace(raw))
	for _, t := range *a.tokens.Load() {
		if subtle.ConstantTimeCompare([]byte(sum), []byte(strings.ToLower(t.SHA256))) == 1 {
			return t.Principal(), nil
		}
	}
	return nil, apierrors.NewUnauthorized("the bearer token is not valid")
}

// Len is the number of tokens known now.
func (a *TokenAuthenticator) Len() int { return len(*a.tokens.Load()) }
