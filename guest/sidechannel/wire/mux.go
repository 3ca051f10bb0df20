package wire

import (
	"fmt"
	"log/slog"
	"time"

	"github.com/hashicorp/yamux"
)

// MuxConfig returns the yamux configuration both ends use: keepalive on (a dead peer is noticed within about
// KeepAliveInterval plus ConnectionWriteTimeout) and yamux's own log lines routed to log at debug level.
func MuxConfig(log *slog.Logger) *yamux.Config {
	cfg := yamux.DefaultConfig()
	cfg.EnableKeepAlive = true
	cfg.KeepAliveInterval = 15 * time.Second
	cfg.ConnectionWriteTimeout = 10 * time.Second
	cfg.StreamOpenTimeout = 30 * time.Second
	cfg.StreamCloseTimeout = time.Minute
	cfg.LogOutput = nil
	cfg.Logger = muxLogger{log: log}
	return cfg
}

// muxLogger adapts slog to yamux's Logger interface.
type muxLogger struct{ log *slog.Logger }

func (l muxLogger) Print(v ...any) { l.log.Debug(fmt.Sprint(v...), "component", "yamux") }

func (l muxLogger) Printf(format string, v ...any) {
	l.log.Debug(fmt.Sprintf(format, v...), "component", "yamux")
}

func (l muxLogger) Println(v ...any) { l.log.Debug(fmt.Sprintln(v...), "component", "yamux") }
