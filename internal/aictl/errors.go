package aictl

import (
	"errors"
	"fmt"
	"io"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"aicli.dev/aicli/internal/client"
)

// exitError carries a specific exit code; a nil err prints nothing.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string {
	if e.err == nil {
		return fmt.Sprintf("exit status %d", e.code)
	}
	return e.err.Error()
}

func (e *exitError) Unwrap() error { return e.err }

// opError names the operation and input an error happened on; for server
// errors it is printed after "Error from server (Reason): ".
type opError struct {
	op  string
	err error
}

func (e *opError) Error() string { return e.op + ": " + e.err.Error() }
func (e *opError) Unwrap() error { return e.err }

// handleError prints err like kubectl and returns the exit code.
func handleError(w io.Writer, err error) int {
	if err == nil {
		return 0
	}
	code := 1
	var ee *exitError
	if errors.As(err, &ee) {
		code = ee.code
		if ee.err == nil {
			return code
		}
		err = ee.err
	}
	for _, e := range flatten(err) {
		fmt.Fprintln(w, formatError(e))
	}
	return code
}

// flatten splits errors.Join results into their parts.
func flatten(err error) []error {
	if j, ok := err.(interface{ Unwrap() []error }); ok { //nolint:errorlint // only the top level is a join
		var out []error
		for _, e := range j.Unwrap() {
			out = append(out, flatten(e)...)
		}
		return out
	}
	return []error{err}
}

// formatError renders one error the way kubectl does.
func formatError(err error) string {
	var ce *client.ConnectionError
	if errors.As(err, &ce) {
		return fmt.Sprintf("error: the connection to the server %s failed - is the supervisor running? (%v)", ce.Server, ce.Cause())
	}
	var status apierrors.APIStatus
	if errors.As(err, &status) {
		st := status.Status()
		msg := st.Message
		var op *opError
		if errors.As(err, &op) {
			msg = op.op + ": " + msg
		}
		switch {
		case st.Reason == metav1.StatusReasonUnauthorized:
			return fmt.Sprintf("error: You must be logged in to the server (Unauthorized): %s (pass --token or set AICLI_TOKEN)", msg)
		case st.Reason == "":
			return "Error from server: " + msg
		default:
			return fmt.Sprintf("Error from server (%s): %s", st.Reason, msg)
		}
	}
	return "error: " + strings.TrimPrefix(err.Error(), "error: ")
}
