// Package builtin assembles the registry of harness adapters compiled into the
// guest. Only the fake harness is wired today; real CLIs get one package each
// under guest/harness/<name> and one line here.
package builtin
