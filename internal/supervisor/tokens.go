package supervisor

import (
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"
	"sigs.k8s.io/yaml"

	"aicli.dev/aicli/internal/apiserver"
)

// CreateToken adds a bearer token bound to namespaces to the token file and
// returns the raw token, which is stored only as its SHA-256. monitors are
// the monitor agents its holder may speak as (a remote monitor's home
// supervisor). The running supervisor reads the file at start.
func CreateToken(file, name string, namespaces, monitors []string) (string, error) {
	if name == "" {
		return "", fmt.Errorf("--name is required")
	}
	if len(namespaces) == 0 {
		return "", fmt.Errorf("--namespace is required (a namespace, or \"*\" for all)")
	}
	for _, m := range monitors {
		if msgs := validation.IsDNS1123Label(m); len(msgs) > 0 {
			return "", fmt.Errorf("--monitor %q: %s", m, strings.Join(msgs, "; "))
		}
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
	tf.Tokens = append(tf.Tokens, apiserver.Token{Name: name, SHA256: apiserver.HashToken(raw), Namespaces: namespaces, Monitors: monitors})
	data, err := yaml.Marshal(tf)
	if err != nil {
		return "", err
	}
	if err := os.MkdirAll(filepath.Dir(file), 0o700); err != nil {
		return "", err
	}
	return raw, writeFileAtomic(file, data, 0o600)
}
