package tools

import (
	"fmt"
	"slices"
	"strings"
)

// ReasonParamMismatch refuses a call whose arguments a tool's pins or declared parameters do not allow.
const ReasonParamMismatch = "param_mismatch"

// BackendArgs returns what a tool's backend receives after its fixed args, given the caller's arguments, the tool's
// pins (k → v) and its declared parameter names (nil: not declared) — docs/decisions/0031.
//
// A tool with neither pins nor declared parameters gets the caller's arguments unchanged. Otherwise they are parsed
// strictly: each is a parameter `--k=v` (k declared, when parameters are declared; not pinned, and not an
// abbreviation of a pinned name) or an operand that does not start with '-'; after a literal `--` every argument is an
// operand. A caller's `--k=v` for a pinned k with exactly the pinned value is dropped. Any other argument starting
// with '-' is refused (*Refusal, reason param_mismatch). The result is canonical: the caller's parameters as `--k=v`
// in the caller's order, every pin as `--k=v` in key order (after the caller's, so last-wins parsers see the pin),
// `--`, then the operands. No option parser can then read a caller's argument as a pinned option or as its value.
func BackendArgs(args []string, pins map[string]string, declared []string) ([]string, error) {
	if len(pins) == 0 && declared == nil {
		return args, nil
	}
	params := make([]string, 0, len(args)+len(pins)+1)
	var operands []string
	for i, a := range args {
		if a == "--" {
			operands = append(operands, args[i+1:]...)
			break
		}
		if !strings.HasPrefix(a, "-") {
			operands = append(operands, a)
			continue
		}
		keep, err := callerParam(a, pins, declared)
		if err != nil {
			return nil, err
		}
		if keep {
			params = append(params, a)
		}
	}
	keys := make([]string, 0, len(pins))
	for k := range pins {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		params = append(params, "--"+k+"="+pins[k])
	}
	return append(append(params, "--"), operands...), nil
}

// callerParam checks a caller's argument starting with '-': keep is false for a pinned parameter passed with its
// pinned value; an argument that is not an allowed `--k=v` is refused.
func callerParam(a string, pins map[string]string, declared []string) (keep bool, err error) {
	k, v, isParam := strings.Cut(strings.TrimPrefix(a, "--"), "=")
	if !strings.HasPrefix(a, "--") || !isParam {
		return false, paramRefusal("argument %.64q is not allowed: %s", a, allowed(pins, declared))
	}
	if pin, pinned := pins[k]; pinned {
		if v != pin {
			return false, paramRefusal("parameter %.64q is pinned: pass it with its pinned value or not at all", k)
		}
		return false, nil
	}
	switch {
	case declared != nil && !slices.Contains(declared, k):
		return false, paramRefusal("parameter %.64q is not declared by the tool: %s", k, allowed(pins, declared))
	case declared == nil && !validParamName(k):
		return false, paramRefusal("argument %.64q is not allowed: a parameter name starts with a letter or digit and holds only letters, digits, '-', '_' and '.'; %s", a, allowed(pins, declared))
	}
	for p := range pins {
		if strings.HasPrefix(foldName(p), foldName(k)) {
			return false, paramRefusal("parameter %.64q could be read as the pinned parameter %q: %s", k, p, allowed(pins, declared))
		}
	}
	return true, nil
}

// validParamName is a conservative option name: an ASCII letter or digit, then letters, digits, '-', '_' or '.'.
func validParamName(k string) bool {
	for i, r := range k {
		alnum := r < 0x80 && (r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9')
		if !alnum && (i == 0 || r != '-' && r != '_' && r != '.') {
			return false
		}
	}
	return k != ""
}

// foldName is how lenient parsers compare option names: case-insensitively, '_' as '-'.
func foldName(k string) string {
	return strings.ReplaceAll(strings.ToLower(k), "_", "-")
}

// allowed says what a caller may pass.
func allowed(pins map[string]string, declared []string) string {
	var b strings.Builder
	switch {
	case declared == nil:
		b.WriteString("pass parameters as --name=value")
	case len(declared) == 0:
		b.WriteString("this tool takes no parameters")
	default:
		b.WriteString("pass parameters as --name=value, name one of " + strings.Join(declared, ", "))
	}
	if len(pins) > 0 {
		keys := make([]string, 0, len(pins))
		for k := range pins {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		b.WriteString(" (pinned: " + strings.Join(keys, ", ") + ")")
	}
	b.WriteString(", and operands that do not start with '-' (or any operand after --)")
	return b.String()
}

func paramRefusal(format string, args ...any) error {
	return &Refusal{Reason: ReasonParamMismatch, Message: fmt.Sprintf(format, args...)}
}
