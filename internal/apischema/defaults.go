package apischema

import (
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/kube-openapi/pkg/validation/spec"
)

// ApplyDefaults fills absent fields that carry a schema default, recursively,
// the way the Kubernetes API server defaults custom resources.
func ApplyDefaults(s *spec.Schema, value any) {
	if s == nil {
		return
	}
	switch v := value.(type) {
	case map[string]any:
		for name, prop := range s.Properties {
			if _, present := v[name]; !present && prop.Default != nil {
				v[name] = normalizeNumber(&prop, runtime.DeepCopyJSONValue(prop.Default))
			}
			if child, ok := v[name]; ok {
				p := prop
				ApplyDefaults(&p, child)
			}
		}
		if s.AdditionalProperties != nil && s.AdditionalProperties.Schema != nil {
			for name, child := range v {
				if _, declared := s.Properties[name]; !declared {
					ApplyDefaults(s.AdditionalProperties.Schema, child)
				}
			}
		}
	case []any:
		if s.Items != nil && s.Items.Schema != nil {
			for _, item := range v {
				ApplyDefaults(s.Items.Schema, item)
			}
		}
	}
}

// normalizeNumber keeps integer defaults integral (JSON decoding of the schema
// yields float64), so defaulted objects encode and convert like user input.
func normalizeNumber(s *spec.Schema, v any) any {
	if f, ok := v.(float64); ok && s.Type.Contains("integer") && f == float64(int64(f)) {
		return int64(f)
	}
	return v
}
