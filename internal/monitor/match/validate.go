package match

import (
	"strings"
	"unicode/utf8"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"aicli.dev/aicli/apis/v1alpha1"
)

// triggerPath is where a TriggerSpec sits in a MonitorAttachment.
var triggerPath = field.NewPath("spec", "trigger")

// Validate reports what makes a trigger unusable, each error naming its field
// under spec.trigger: an empty keyword list (Required), an empty keyword
// (Required), a whitespace-only keyword or one that is not valid UTF-8
// (Invalid), an unknown mode (NotSupported), and a keyword that repeats an
// earlier one — the same text after case folding (when the trigger is
// case-insensitive) with the same mode (Duplicate). An empty mode is
// Substring. Limits the schema already states (lengths, counts, the speaker
// pattern) are left to the schema.
func Validate(t v1alpha1.TriggerSpec) field.ErrorList {
	var errs field.ErrorList
	kwPath := triggerPath.Child("keywords")
	if len(t.Keywords) == 0 {
		return append(errs, field.Required(kwPath, "at least one keyword"))
	}
	type key struct {
		text string
		mode v1alpha1.MatchMode
	}
	seen := make(map[key]bool, len(t.Keywords))
	for i, k := range t.Keywords {
		p := kwPath.Index(i)
		switch {
		case k.Text == "":
			errs = append(errs, field.Required(p.Child("text"), "empty"))
			continue
		case !utf8.ValidString(k.Text):
			errs = append(errs, field.Invalid(p.Child("text"), k.Text, "not valid UTF-8"))
			continue
		case strings.TrimSpace(k.Text) == "":
			errs = append(errs, field.Invalid(p.Child("text"), k.Text, "whitespace only"))
			continue
		}
		mode := modeOf(k)
		if mode != v1alpha1.MatchSubstring && mode != v1alpha1.MatchWord {
			errs = append(errs, field.NotSupported(p.Child("mode"), k.Mode,
				[]string{string(v1alpha1.MatchSubstring), string(v1alpha1.MatchWord)}))
			continue
		}
		kk := key{foldKeyword(k.Text, t.CaseSensitive), mode}
		if seen[kk] {
			errs = append(errs, field.Duplicate(p, k.Text))
			continue
		}
		seen[kk] = true
	}
	return errs
}

// modeOf is the keyword's mode with the schema default applied.
func modeOf(k v1alpha1.Keyword) v1alpha1.MatchMode {
	if k.Mode == "" {
		return v1alpha1.MatchSubstring
	}
	return k.Mode
}

// foldKeyword is the keyword as the automaton holds it.
func foldKeyword(s string, caseSensitive bool) string {
	if caseSensitive {
		return s
	}
	return strings.ToLower(s)
}
