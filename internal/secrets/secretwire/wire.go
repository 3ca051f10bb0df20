package secretwire

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Plural is the path segment of the endpoints:
// /namespaces/{ns}/secrets (GET: list) and /namespaces/{ns}/secrets/{name}
// (PUT: body is the value; DELETE).
const Plural = "secrets"

// MaxValueBytes bounds one secret value.
const MaxValueBytes = 64 << 10

// ContentType is the content type of a PUT body.
const ContentType = "application/octet-stream"

// Secret describes a stored secret: never its value.
type Secret struct {
	// Name is the secret's name.
	Name string `json:"name"`
	// Size is the value's length in bytes.
	Size int64 `json:"size"`
	// Modified is when the value was last set.
	Modified metav1.Time `json:"modified"`
}

// List is the reply of GET …/secrets, sorted by name.
type List struct {
	Items []Secret `json:"items"`
}

// ReadValue reads a secret value as the command-line tools take it: the
// whole of r, without its trailing line break, non-empty and at most
// MaxValueBytes.
func ReadValue(r io.Reader) ([]byte, error) {
	v, err := io.ReadAll(io.LimitReader(r, MaxValueBytes+3)) // + a line break, + one byte too many
	if err != nil {
		return nil, err
	}
	v = bytes.TrimRight(v, "\r\n")
	switch {
	case len(v) == 0:
		return nil, errors.New("the secret value is empty")
	case len(v) > MaxValueBytes:
		return nil, fmt.Errorf("the secret value is larger than %d KiB", MaxValueBytes>>10)
	}
	return v, nil
}

// ReadValueFrom is ReadValue of file, or of stdin when file is "" or "-".
func ReadValueFrom(file string, stdin io.Reader) ([]byte, error) {
	if file == "" || file == "-" {
		return ReadValue(stdin)
	}
	f, err := os.Open(file)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return ReadValue(f)
}
