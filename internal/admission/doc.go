// Package admission holds the cross-object write checks of the API: immutable
// fields and "one live conversation per agent" (docs/concepts.md#lifecycle).
package admission
