// Command e2eguest is a minimal guest for the gateway's Docker test: it runs sidechannel.Serve from the bootstrap
// environment and answers /whoami with what it can observe from inside the container.
package main

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"os"
	"os/signal"
	"syscall"

	scwire "aicli.dev/aicli/guest/sidechannel/wire"

	"aicli.dev/aicli/guest/sidechannel"
)

func main() {
	log := slog.New(slog.NewJSONHandler(os.Stderr, nil))
	b, ok, err := sidechannel.BootstrapFromEnv()
	if err != nil || !ok {
		log.Error("no usable bootstrap", "ok", ok, "err", err)
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	mux := http.NewServeMux()
	mux.HandleFunc("GET /whoami", func(w http.ResponseWriter, _ *http.Request) {
		_, tokenVisible := os.LookupEnv(scwire.EnvLaunchToken)
		_ = json.NewEncoder(w).Encode(map[string]any{
			"conversation": b.ConversationID,
			"uid":          os.Getuid(),
			"tokenInEnv":   tokenVisible,
		})
	})
	if err := sidechannel.Serve(ctx, b, mux, log); err != nil {
		log.Error("side channel ended", "err", err)
		os.Exit(1)
	}
}
