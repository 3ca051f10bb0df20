package integration

import (
	"context"
	"fmt"
	"io"
	"os"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"aicli.dev/aicli/internal/aictl"
	"aicli.dev/aicli/internal/client"
)

func TestRealSamplesApplyUnchangedAndDiff(t *testing.T) {
	srv := startReal(t).unix
	const ns = "it-samples"
	r := run(t, srv, "apply", "-f", "../../../config/samples", "-n", ns)
	wantCode(t, r, 0)
	entries, _ := os.ReadDir("../../../config/samples")
	if strings.Count(r.out, " created\n") != len(entries) {
		t.Fatalf("apply samples:\n%s\n%s", r.out, r.err)
	}
	cl, err := client.New(client.Config{Server: srv})
	if err != nil {
		t.Fatal(err)
	}
	before, err := cl.Get(context.Background(), "agents", ns, "coder")
	if err != nil {
		t.Fatal(err)
	}

	r = run(t, srv, "apply", "-f", "../../../config/samples", "-n", ns)
	wantCode(t, r, 0)
	if strings.Count(r.out, " unchanged\n") != len(entries) {
		t.Fatalf("re-apply of unchanged samples:\n%s", r.out)
	}
	after, err := cl.Get(context.Background(), "agents", ns, "coder")
	if err != nil {
		t.Fatal(err)
	}
	if after.GetGeneration() != before.GetGeneration() || after.GetGeneration() != 1 {
		t.Fatalf("re-apply bumped generation %d → %d", before.GetGeneration(), after.GetGeneration())
	}

	r = run(t, srv, "diff", "-f", "../../../config/samples", "-n", ns)
	wantCode(t, r, 0)
	changed := writeFile(t, t.TempDir(), "coder.yaml", strings.Replace(readFile(t, "../../../config/samples/aicli_v1alpha1_agent_claude.yaml"),
		"memoryMiB: 4096", "memoryMiB: 8192", 1))
	r = run(t, srv, "diff", "-f", changed, "-n", ns)
	wantCode(t, r, 1)
	if !strings.Contains(r.out, "-    memoryMiB: 4096\n+    memoryMiB: 8192\n") {
		t.Fatalf("diff against the real server:\n%s", r.out)
	}
}

func TestRealUnknownFieldRejected(t *testing.T) {
	srv := startReal(t).unix
	f := writeFile(t, t.TempDir(), "bad.yaml", fmt.Sprintf(agentYAML, "ok", "m")+"---\n"+fmt.Sprintf(agentYAML, "bad", "m")+"  colour: red\n")
	r := run(t, srv, "apply", "-f", f, "-n", "it-bad")
	wantCode(t, r, 1)
	if r.out != "agent.aicli.dev/ok created\n" ||
		!strings.HasPrefix(r.err, fmt.Sprintf("Error from server (BadRequest): error when applying %q (document 2): ", f)) ||
		!strings.Contains(r.err, "colour") {
		t.Fatalf("unknown field via the real server:\nout %q\nerr %q", r.out, r.err)
	}
}

func TestRealWaitReadyGetDescribeDelete(t *testing.T) {
	srv := startReal(t).unix
	const ns = "it-wait"
	dir := t.TempDir()
	wantCode(t, run(t, srv, "apply", "-n", ns, "-f", writeFile(t, dir, "a.yaml", fmt.Sprintf(agentYAML, "echo", "one"))), 0)

	// The real AgentReconciler makes the agent Ready for generation 1.
	r := run(t, srv, "wait", "-n", ns, "--for=condition=Ready", "agent/echo", "--timeout", "20s")
	wantCode(t, r, 0)

	// A spec change: wait must see Ready for generation 2, not the old one.
	wantCode(t, run(t, srv, "apply", "-n", ns, "-f", writeFile(t, dir, "a.yaml", fmt.Sprintf(agentYAML, "echo", "two"))), 0)
	r = run(t, srv, "wait", "-n", ns, "--for=condition=Ready", "agent/echo", "--timeout", "20s")
	wantCode(t, r, 0)
	r = run(t, srv, "get", "agent", "echo", "-n", ns, "-o", "json")
	wantCode(t, r, 0)
	obj := &unstructured.Unstructured{}
	if err := obj.UnmarshalJSON([]byte(r.out)); err != nil {
		t.Fatal(err)
	}
	if og, _, _ := unstructured.NestedInt64(obj.Object, "status", "observedGeneration"); obj.GetGeneration() != 2 || og != 2 {
		t.Fatalf("after wait: generation %d observed %d", obj.GetGeneration(), og)
	}

	r = run(t, srv, "get", "agents", "-n", ns)
	wantCode(t, r, 0)
	if !regexp.MustCompile(`(?m)^NAME +HARNESS +MODEL +READY +LIVE +UNREAD +AGE\necho +fake +two +True +<none> +0 +\d+s$`).MatchString(r.out) {
		t.Fatalf("get table from the real server:\n%s", r.out)
	}

	r = run(t, srv, "describe", "agent", "echo", "-n", ns)
	wantCode(t, r, 0)
	for _, want := range []string{`(?m)^    Ready +True `, `(?m)^  ADDED +\d+s +\d+ +created \(generation 1\)$`,
		`(?m)^  MODIFIED +\d+s +\d+ +spec.model: "one" → "two"$`, `(?m)^  STATUS +`} {
		if !regexp.MustCompile(want).MatchString(r.out) {
			t.Errorf("describe lacks %s", want)
		}
	}
	if t.Failed() {
		t.Logf("describe:\n%s", r.out)
	}

	r = run(t, srv, "delete", "agent", "echo", "-n", ns, "--wait", "--timeout", "20s")
	wantCode(t, r, 0)
	if r.out != "agent.aicli.dev \"echo\" deleted\n" {
		t.Fatalf("delete output %q", r.out)
	}
	r = run(t, srv, "get", "agent", "echo", "-n", ns)
	wantCode(t, r, 1)
	if !strings.Contains(r.err, "(NotFound)") {
		t.Fatalf("after delete --wait: %q", r.err)
	}
}

// start --wait and send against the real controllers: this stack has no
// container runtime, so its conversations report Ready=False NotImplemented
// and the waits time out naming that reason.
func TestRealStartWaitAndSendTimeOutWithTheControllersReason(t *testing.T) {
	srv := startReal(t).unix
	const ns = "it-start"
	wantCode(t, run(t, srv, "apply", "-n", ns, "-f", writeFile(t, t.TempDir(), "a.yaml", fmt.Sprintf(agentYAML, "echo", "m"))), 0)
	r := run(t, srv, "start", "echo", "-n", ns, "-o", "name")
	wantCode(t, r, 0)
	conv := strings.TrimPrefix(strings.TrimSpace(r.out), "conversation.aicli.dev/")
	wantCode(t, run(t, srv, "wait", "--for=condition=Ready=False", "conversation/"+conv, "-n", ns, "--timeout=20s"), 0)

	r = run(t, srv, "start", "--wait=500ms", "echo", "-n", ns)
	wantCode(t, r, 1)
	if r.out != "" || !strings.Contains(r.err, "conversation.aicli.dev/"+conv+" continued; waiting up to 500ms for it to be live\n") ||
		!strings.Contains(r.err, "error: start echo: timed out after 500ms waiting for conversation "+conv+" to be live "+
			"(Ready=True for generation 1); Ready is False (NotImplemented): this supervisor does not converge conversations yet") {
		t.Fatalf("start --wait:\nstdout %q\nstderr %q", r.out, r.err)
	}
	r = run(t, srv, "send", conv, "hi", "-n", ns, "--timeout=500ms")
	wantCode(t, r, 1)
	if !strings.Contains(r.err, "conversation "+conv+" is not live yet (Ready is False (NotImplemented): ") ||
		!strings.Contains(r.err, "error: send to "+conv+": timed out after 500ms waiting for conversation "+conv) {
		t.Fatalf("send:\n%s", r.err)
	}
}

func TestRealGetWatch(t *testing.T) {
	srv := startReal(t).unix
	const ns = "it-watch"
	dir := t.TempDir()
	wantCode(t, run(t, srv, "apply", "-n", ns, "-f", writeFile(t, dir, "a.yaml", fmt.Sprintf(agentYAML, "listed", "m"))), 0)
	out, stop, wait := started(t, srv, "get", "agents", "-n", ns, "-w", "-o", "name")
	// Once the listing is printed, later changes can only arrive through the
	// watch, which starts from the list's resourceVersion.
	eventually(t, "the listing", func() bool { return strings.HasPrefix(out.String(), "agent.aicli.dev/listed\n") })
	wantCode(t, run(t, srv, "apply", "-n", ns, "-f", writeFile(t, dir, "b.yaml", fmt.Sprintf(agentYAML, "streamed", "m"))), 0)
	eventually(t, "the new agent streams in", func() bool { return strings.Contains(out.String(), "agent.aicli.dev/streamed") })
	stop()
	wantCode(t, wait(), 0)
}

// The output of get -o yaml applies cleanly to another namespace.
func TestRealApplyGetOutputElsewhere(t *testing.T) {
	srv := startReal(t).unix
	dir := t.TempDir()
	wantCode(t, run(t, srv, "apply", "-n", "it-from", "-f", writeFile(t, dir, "a.yaml", fmt.Sprintf(agentYAML, "copied", "m"))), 0)
	wantCode(t, run(t, srv, "wait", "-n", "it-from", "--for=condition=Ready", "agent/copied"), 0)
	r := run(t, srv, "get", "agent", "copied", "-n", "it-from", "-o", "yaml")
	wantCode(t, r, 0)
	exported := strings.Replace(r.out, "namespace: it-from", "namespace: it-to", 1)
	r = run(t, srv, "apply", "-f", writeFile(t, dir, "exported.yaml", exported))
	wantCode(t, r, 0)
	if r.out != "agent.aicli.dev/copied created\n" {
		t.Fatalf("apply of get -o yaml output: %q", r.out)
	}
	r = run(t, srv, "get", "agent", "copied", "-n", "it-to", "-o", "json")
	wantCode(t, r, 0)
	obj := &unstructured.Unstructured{}
	if err := obj.UnmarshalJSON([]byte(r.out)); err != nil {
		t.Fatal(err)
	}
	if obj.GetGeneration() != 1 || obj.GetNamespace() != "it-to" {
		t.Fatalf("copied object: generation %d namespace %s", obj.GetGeneration(), obj.GetNamespace())
	}
}

func TestRealTLSTokens(t *testing.T) {
	real := startReal(t)
	ca := "--certificate-authority=" + real.caFile
	r := run(t, real.tcp, ca, "get", "agents", "-n", "it-tls")
	wantCode(t, r, 1)
	if !strings.HasPrefix(r.err, "error: You must be logged in to the server (Unauthorized): ") {
		t.Fatalf("no token: %q", r.err)
	}
	r = run(t, real.tcp, ca, "--token", realToken, "get", "agents", "-n", "other")
	wantCode(t, r, 1)
	if !strings.HasPrefix(r.err, "Error from server (Forbidden): ") {
		t.Fatalf("other namespace: %q", r.err)
	}
	f := writeFile(t, t.TempDir(), "a.yaml", fmt.Sprintf(agentYAML, "remote", "m"))
	r = run(t, real.tcp, ca, "--token", realToken, "apply", "-n", "it-tls", "-f", f)
	wantCode(t, r, 0)
	r = run(t, real.tcp, ca, "--token", realToken, "get", "agents", "-n", "it-tls", "-o", "name")
	wantCode(t, r, 0)
	if r.out != "agent.aicli.dev/remote\n" {
		t.Fatalf("get over TLS: %q", r.out)
	}
}

// BenchmarkGetAgents1000 runs `aictl get agents` in-process, through the real
// supervisor's unix socket, against a namespace of 1,000 agents: client set-up,
// list, JSON decode, print-column evaluation and table output.
func BenchmarkGetAgents1000(b *testing.B) {
	srv := startRealWith(b, false).unix
	const ns, n = "bench-1000", 1000
	cl, err := client.New(client.Config{Server: srv})
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	list, err := cl.List(ctx, "agents", ns, client.ListOptions{})
	if err != nil {
		b.Fatal(err)
	}
	if len(list.Items) < n {
		createAgents(b, cl, ns, n)
		if list, err = cl.List(ctx, "agents", ns, client.ListOptions{}); err != nil {
			b.Fatal(err)
		}
	}
	// Give every agent the status a controller would write, so rows carry
	// conditions (the controllers are not running: they would compete for the
	// two CPUs while the benchmark measures).
	for i := range list.Items {
		if !client.ConditionMet(&list.Items[i], "Ready", "True") {
			setStatusReady(b, cl, &list.Items[i])
		}
	}
	var out countingWriter
	args := []string{"--server", srv, "get", "agents", "-n", ns}
	if code := aictl.Run(ctx, args, aictl.IOStreams{In: strings.NewReader(""), Out: &out, ErrOut: os.Stderr}); code != 0 || out.lines != n+1 {
		b.Fatalf("get agents: exit %d, %d lines", code, out.lines)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		if code := aictl.Run(ctx, args, aictl.IOStreams{In: strings.NewReader(""), Out: io.Discard, ErrOut: os.Stderr}); code != 0 {
			b.Fatalf("exit %d", code)
		}
	}
}

func createAgents(tb testing.TB, cl *client.Client, ns string, n int) {
	tb.Helper()
	var wg sync.WaitGroup
	errs := make(chan error, n)
	work := make(chan int)
	for range 32 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range work {
				obj := &unstructured.Unstructured{Object: map[string]any{
					"apiVersion": "aicli.dev/v1alpha1", "kind": "Agent",
					"metadata": map[string]any{"name": fmt.Sprintf("agent-%04d", i), "namespace": ns,
						"labels": map[string]any{"bench": "true"}},
					"spec": map[string]any{"harness": "claude", "model": "claude-sonnet", "persona": strings.Repeat("persona ", 20)},
				}}
				if _, err := cl.Create(context.Background(), obj, client.WriteOptions{}); err != nil {
					errs <- err
				}
			}
		}()
	}
	for i := range n {
		work <- i
	}
	close(work)
	wg.Wait()
	close(errs)
	for err := range errs {
		tb.Fatalf("create: %v", err)
	}
}

// setStatusReady writes Ready=True for the object's generation through the
// status subresource, as the agent controller does.
func setStatusReady(tb testing.TB, cl *client.Client, obj *unstructured.Unstructured) {
	tb.Helper()
	o := obj.DeepCopy()
	cond := map[string]any{"type": "Ready", "status": "True", "reason": "Succeeded", "message": "home and workspace ready",
		"observedGeneration": o.GetGeneration(), "lastTransitionTime": time.Now().UTC().Format(time.RFC3339)}
	_ = unstructured.SetNestedSlice(o.Object, []any{cond}, "status", "conditions")
	_ = unstructured.SetNestedField(o.Object, o.GetGeneration(), "status", "observedGeneration")
	_ = unstructured.SetNestedField(o.Object, "it", "status", "homeSupervisor")
	if _, err := cl.UpdateStatus(context.Background(), o, client.WriteOptions{}); err != nil {
		tb.Fatalf("status of %s: %v", o.GetName(), err)
	}
}
