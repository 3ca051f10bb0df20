package supervisor

import (
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"os"
	"path/filepath"
	"slices"

	"sigs.k8s.io/yaml"

	"aicli.dev/aicli/internal/apiserver"
)

// CreateToken adds a bearer token to the token file — spec's name, namespaces,
// role ("" is edit) and the monitor agents its holder may speak as (a remote
// monitor's home supervisor) — and returns the raw token, which is stored only
// as its SHA-256. The running supervisor reads the file at start.
func CreateToken(file string, spec apiserver.Token) (string, error) {
	if spec.Name == "" {
		return "", fmt.Errorf("--name is required")
	}
	if len(spec.Namespaces) == 0 {
		return "", fmt.Errorf("--namespace is required (a namespace, or \"*\" for all)")
	}
	if err := spec.Validate(); err != nil {
		return "", err
	}
	tf, err := apiserver.LoadTokens(file)
	if err != nil {
		return "", err
	}
	if slices.ContainsFunc(tf.Tokens, func(t apiserver.Token) bool { return t.Name == spec.Name }) {
		return "", fmt.Errorf("a token named %q already exists in %s", spec.Name, file)
	}
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	raw := base64.RawURLEncoding.EncodeToString(b)
	spec.SHA256 = apiserver.HashToken(raw)
	tf.Tokens = append(tf.Tokens, spec)
	data, err := yaml.Marshal(tf)
	if err != nil {
		return "", err
	}
	if err := os.MkdirAll(filepath.Dir(file), 0o700); err != nil {
		return "", err
	}
	return raw, writeFileAtomic(file, data, 0o600)
}

// DeleteToken removes the token named name from the token file; a running
// supervisor refuses it within a second.
func DeleteToken(file, name string) error {
	tf, err := apiserver.LoadTokens(file)
	if err != nil {
		return err
	}
	i := slices.IndexFunc(tf.Tokens, func(t apiserver.Token) bool { return t.Name == name })
	if i < 0 {
		return fmt.Errorf("no token named %q in %s", name, file)
	}
	tf.Tokens = slices.Delete(tf.Tokens, i, i+1)
	data, err := yaml.Marshal(tf)
	if err != nil {
		return err
	}
	return writeFileAtomic(file, data, 0o600)
}
