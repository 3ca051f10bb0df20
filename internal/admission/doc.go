// Package admission holds the write checks of the API that the schema cannot
// state: immutable fields, "one live conversation per agent"
// (docs/concepts.md#lifecycle), peer selectors, grant tools and monitor
// triggers; each refusal names its field.
package admission
