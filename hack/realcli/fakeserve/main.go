// Command fakeserve runs internal/fakeprovider on its own, for driving a real
// CLI by hand: it prints the base URL, serves until SIGINT/SIGTERM, then writes
// the request log (one JSON object per line, bodies included) to -log.
//
//	go run ./hack/realcli/fakeserve -addr 127.0.0.1:8787 -log /tmp/requests.jsonl
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"aicli.dev/aicli/internal/fakeprovider"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:0", "listen address")
	logPath := flag.String("log", "", "request log file (JSON lines); empty: stdout")
	delay := flag.Duration("token-delay", 0, "per-token streaming delay")
	flag.Parse()
	if err := run(*addr, *logPath, *delay); err != nil {
		fmt.Fprintln(os.Stderr, "fakeserve:", err)
		os.Exit(1)
	}
}

func run(addr, logPath string, delay time.Duration) error {
	s, err := fakeprovider.Start(fakeprovider.Options{Addr: addr, TokenDelay: delay})
	if err != nil {
		return err
	}
	defer s.Close()
	fmt.Println(s.URL())
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	<-ctx.Done()
	out := os.Stdout
	if logPath != "" {
		f, err := os.Create(logPath)
		if err != nil {
			return err
		}
		defer f.Close()
		out = f
	}
	enc := json.NewEncoder(out)
	for _, r := range s.Requests() {
		rec := struct {
			fakeprovider.Request
			RawBody string `json:"body"`
		}{r, string(r.Body)}
		if err := enc.Encode(rec); err != nil {
			return fmt.Errorf("write log: %w", err)
		}
	}
	return nil
}
