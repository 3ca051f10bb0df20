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

// CreateToken adds a bearer token bound to namespaces, with role ("" is
// edit), to the token file and returns the raw token, which is stored only as
// its SHA-256. The running supervisor reads the file at start.
func CreateToken(file, name string, namespaces []string, role string) (string, error) {
	if name == "" {
		return "", fmt.Errorf("--name is required")
	}
	if len(namespaces) == 0 {
		return "", fmt.Errorf("--namespace is required (a namespace, or \"*\" for all)")
	}
	entry := apiserver.Token{Name: name, Namespaces: namespaces, Role: role}
	if err := entry.Validate(); err != nil {
		return "", fmt.Errorf("--role: %w", err)
	}
	tf, err := apiserver.LoadTokens(file)
	if err != nil {
		return "", err
	}
	if slices.ContainsFunc(tf.Tokens, func(t apiserver.Token) bool { return t.Name == name }) {
		return "", fmt.Errorf("a token named %q already exists in %s", name, file)
	}
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	raw := base64.RawURLEncoding.EncodeToString(b)
	entry.SHA256 = apiserver.HashToken(raw)
	tf.Tokens = append(tf.Tokens, entry)
	data, err := yaml.Marshal(tf)
	if err != nil {
		return "", err
	}
	if err := os.MkdirAll(filepath.Dir(file), 0o700); err != nil {
		return "", err
	}
	return raw, writeFileAtomic(file, data, 0o600)
}
