package tools

import (
	"fmt"
	"slices"
	"strings"
)

// ParseParams returns the `--k=v` arguments as k → v (later ones win); other arguments are ignored.
func ParseParams(args []string) map[string]string {
	out := map[string]string{}
	for _, a := range args {
		if k, v, ok := paramArg(a); ok {
			out[k] = v
		}
	}
	return out
}

// paramArg splits "--k=v".
func paramArg(a string) (k, v string, ok bool) {
	rest, found := strings.CutPrefix(a, "--")
	if !found {
		return "", "", false
	}
	k, v, ok = strings.Cut(rest, "=")
	return k, v, ok && k != ""
}

// ApplyPins enforces pinned parameters: a caller's `--k=v` for a pinned k must carry the pinned value (it is then
// dropped), and a bare `--k` for a pinned k is refused (its value could follow as the next argument); every pin is
// appended as `--k=v`, in key order. A mismatch is a *Refusal with reason param_mismatch.
func ApplyPins(args []string, pins map[string]string) ([]string, error) {
	if len(pins) == 0 {
		return args, nil
	}
	out := make([]string, 0, len(args)+len(pins))
	for _, a := range args {
		if a == "--" {
			break // later arguments are operands, and the pins still follow as options below
		}
		if k, v, ok := paramArg(a); ok {
			if pin, pinned := pins[k]; pinned {
				if v != pin {
					return nil, &Refusal{Reason: "param_mismatch", Message: fmt.Sprintf("parameter %s is pinned", k)}
				}
				continue
			}
		} else if k, found := strings.CutPrefix(a, "--"); found {
			if _, pinned := pins[k]; pinned {
				return nil, &Refusal{Reason: "param_mismatch", Message: fmt.Sprintf("parameter %s is pinned; pass it as --%s=VALUE or not at all", k, k)}
			}
		}
		out = append(out, a)
	}
	keys := make([]string, 0, len(pins))
	for k := range pins {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		out = append(out, "--"+k+"="+pins[k])
	}
	if i := slices.Index(args, "--"); i >= 0 {
		out = append(out, args[i:]...)
	}
	return out, nil
}
