package main

import (
	"bufio"
	"errors"
	"os"
	"strings"

	"k8s.io/apimachinery/pkg/runtime"

	"aicli.dev/aicli/apis/v1alpha1"
)

// Every tool definition the soak applies is in this file.

// soakTool is the granted tool each worker calls with the fake CLI's "!run soakTool ID".
const soakTool = "soak-tool"

// toolScript is the tool's host-side backend: it appends the call's id to the invocation log (first, so every
// call the supervisor could record is in it), then answers "ok ID". $1 is the log (pinned in the class's args),
// $2 the caller's argument.
const toolScript = `printf '%s\n' "$2" >> "$1"; echo "ok $2"`

// toolObjects are every object the soak applies for its tool: the cluster-scoped ToolClass of its exec backend, and
// one Grant per worker naming it.
func toolObjects(workers []string, invocationLog string) []runtime.Object {
	class := &v1alpha1.ToolClass{Spec: v1alpha1.ToolClassSpec{
		Usage:          soakTool + " ID: records ID on the supervisor host and answers ok ID",
		TimeoutSeconds: 20,
		Backend: v1alpha1.ToolBackend{Exec: &v1alpha1.ExecBackend{
			Command: "/bin/sh",
			Args:    []string{"-c", toolScript, soakTool, invocationLog},
		}},
	}}
	class.Name = soakTool
	out := []runtime.Object{class}
	for _, agent := range workers {
		g := &v1alpha1.Grant{Spec: v1alpha1.GrantSpec{
			Subject: agent,
			Tools:   []v1alpha1.ToolGrant{{Name: soakTool, ClassName: soakTool}},
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
