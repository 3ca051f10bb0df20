package main

import (
	"bufio"
	"errors"
	"os"
	"strings"

	"k8s.io/apimachinery/pkg/runtime"

	"aicli.dev/aicli/apis/v1alpha1"
)

// Every tool definition the soak applies is in this file, so that it can follow a change of the Grant's shape
// (host-side backends moving into a cluster-scoped kind that Grants name) in one place.

// soakTool is the granted tool each worker calls with the fake CLI's "!run soakTool ID".
const soakTool = "soak-tool"

// toolScript is the tool's host-side backend: it appends the call's id to the invocation log (first, so every
// call the supervisor could record is in it), then answers "ok ID". $1 is the log (pinned in the grant's args),
// $2 the caller's argument.
const toolScript = `printf '%s\n' "$2" >> "$1"; echo "ok $2"`

// toolObjects are every object the soak applies for its tool: one Grant per worker, each holding the tool with its
// exec backend (switching to a cluster-scoped class of the backend that Grants name changes only this function).
func toolObjects(workers []string, invocationLog string) []runtime.Object {
	var out []runtime.Object
	for _, agent := range workers {
		g := &v1alpha1.Grant{Spec: v1alpha1.GrantSpec{
			Subject: agent,
			Tools: []v1alpha1.ToolGrant{{
				Name:           soakTool,
				Usage:          soakTool + " ID: records ID on the supervisor host and answers ok ID",
				TimeoutSeconds: 20,
				Backend: v1alpha1.ToolBackend{Exec: &v1alpha1.ExecBackend{
					Command: "/bin/sh",
					Args:    []string{"-c", toolScript, soakTool, invocationLog},
				}},
			}},
		}}
		g.Namespace, g.Name = namespace, grantName(agent)
		out = append(out, g)
	}
	return out
}

// grantName is the Grant that holds agent's soak tool (the tool check reads its call counters).
func grantName(agent string) string { return agent + "-tools" }

// readInvocations returns the ids the backend logged, with how often each was logged.
func readInvocations(path string) (map[string]int, error) {
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return map[string]int{}, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	out := map[string]int{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if id := strings.TrimSpace(sc.Text()); id != "" {
			out[id]++
		}
	}
	return out, sc.Err()
}
