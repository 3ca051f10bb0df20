package match

import (
	"slices"
	"testing"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"aicli.dev/aicli/apis/v1alpha1"
)

func TestValidate(t *testing.T) {
	type want struct {
		typ   field.ErrorType
		field string
	}
	for _, tc := range []struct {
		name string
		tr   v1alpha1.TriggerSpec
		want []want
	}{
		{"valid", trigger(false, sub("panic"), word("panic"), word("deadlock"), v1alpha1.Keyword{Text: " oom "}), nil},
		{"no keywords", trigger(false), []want{{field.ErrorTypeRequired, "spec.trigger.keywords"}}},
		{"empty keyword", trigger(false, sub("a"), sub("b"), sub("")),
			[]want{{field.ErrorTypeRequired, "spec.trigger.keywords[2].text"}}},
		{"whitespace only", trigger(false, sub(" \t\n")),
			[]want{{field.ErrorTypeInvalid, "spec.trigger.keywords[0].text"}}},
		{"invalid UTF-8", trigger(false, sub("pan\xffic")),
			[]want{{field.ErrorTypeInvalid, "spec.trigger.keywords[0].text"}}},
		{"unknown mode", trigger(false, v1alpha1.Keyword{Text: "x", Mode: "Regex"}),
			[]want{{field.ErrorTypeNotSupported, "spec.trigger.keywords[0].mode"}}},
		{"duplicate after folding", trigger(false, sub("Panic"), word("panic"), sub("PANIC")),
			[]want{{field.ErrorTypeDuplicate, "spec.trigger.keywords[2]"}}},
		{"default mode is Substring", trigger(false, sub("panic"), v1alpha1.Keyword{Text: "panic"}),
			[]want{{field.ErrorTypeDuplicate, "spec.trigger.keywords[1]"}}},
		{"case-sensitive keeps case apart", trigger(true, sub("Panic"), sub("panic"), sub("panic")),
			[]want{{field.ErrorTypeDuplicate, "spec.trigger.keywords[2]"}}},
		{"all errors reported", trigger(false, sub(""), sub(" "), sub("x"), sub("X")), []want{
			{field.ErrorTypeRequired, "spec.trigger.keywords[0].text"},
			{field.ErrorTypeInvalid, "spec.trigger.keywords[1].text"},
			{field.ErrorTypeDuplicate, "spec.trigger.keywords[3]"},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got []want
			for _, e := range Validate(tc.tr) {
				got = append(got, want{e.Type, e.Field})
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("Validate = %v, want %v", got, tc.want)
			}
			_, err := Compile(tc.tr)
			if (err != nil) != (len(tc.want) > 0) {
				t.Errorf("Compile error = %v, want one: %v", err, len(tc.want) > 0)
			}
		})
	}
}
