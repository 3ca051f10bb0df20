package fakeprovider

import (
	"encoding/json"
	"sort"
	"strings"
)

// ValueForSchema returns a JSON value that matches schema (JSON Schema or the
// Gemini OpenAPI subset, type names in any case): objects get every property
// (required ones first), strings get text (or the first enum value), numbers
// the minimum or 0, booleans false, arrays minItems items (at least one when
// the schema asks for it). An unreadable schema yields {"text": text}.
func ValueForSchema(schema json.RawMessage, text string) json.RawMessage {
	var s map[string]any
	if err := json.Unmarshal(schema, &s); err != nil {
		b, _ := json.Marshal(map[string]any{"text": text})
		return b
	}
	b, err := json.Marshal(valueFor(s, text, 0))
	if err != nil {
		b, _ = json.Marshal(map[string]any{"text": text})
	}
	return b
}

func valueFor(s map[string]any, text string, depth int) any {
	if depth > 16 {
		return nil
	}
	if enum, ok := s["enum"].([]any); ok && len(enum) > 0 {
		return enum[0]
	}
	if c, ok := s["const"]; ok {
		return c
	}
	for _, k := range []string{"anyOf", "oneOf", "allOf"} {
		if alts, ok := s[k].([]any); ok && len(alts) > 0 {
			if m, ok := alts[0].(map[string]any); ok {
				return valueFor(m, text, depth+1)
			}
		}
	}
	typ := ""
	switch t := s["type"].(type) {
	case string:
		typ = strings.ToLower(t)
	case []any:
		for _, x := range t {
			if xs, ok := x.(string); ok && xs != "null" {
				typ = strings.ToLower(xs)
				break
			}
		}
	}
	if typ == "" {
		if _, ok := s["properties"]; ok {
			typ = "object"
		}
	}
	switch typ {
	case "object":
		out := map[string]any{}
		props, _ := s["properties"].(map[string]any)
		names := make([]string, 0, len(props))
		for n := range props {
			names = append(names, n)
		}
		sort.Strings(names)
		for _, n := range names {
			if ps, ok := props[n].(map[string]any); ok {
				out[n] = valueFor(ps, text, depth+1)
			}
		}
		return out
	case "array":
		n := 0
		if m, ok := s["minItems"].(float64); ok {
			n = int(m)
		}
		items, _ := s["items"].(map[string]any)
		out := make([]any, 0, n)
		for i := 0; i < n && items != nil; i++ {
			out = append(out, valueFor(items, text, depth+1))
		}
		return out
	case "integer", "number":
		if m, ok := s["minimum"].(float64); ok {
			return m
		}
		return 0
	case "boolean":
		return false
	case "null":
		return nil
	default:
		return text
	}
}
