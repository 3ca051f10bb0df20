package wire

import (
	"fmt"
	"log/slog"
	"time"

	"github.com/hashicorp/yamux"
)

// MaxStreamWindow is the most one stream may have in flight towards its reader: a fast-scrolling CLI's output
// stream (128 KiB frames) keeps going while the supervisor reads, where yamux's default 256 KiB stalled it on
// window updates. It is also what one stream can make its receiver buffer.
const MaxStreamWindow = 1 << 20

// MuxConfig returns the yamux configuration both ends use: keepalive on (a dead peer is noticed within about
// KeepAliveInterval plus ConnectionWriteTimeout), MaxStreamWindow, and yamux's own log lines routed to log at
// debug level.
func MuxConfig(log *slog.Logger) *yamux.Config {
	cfg := yamux.DefaultConfig()
	cfg.EnableKeepAlive = true
	cfg.MaxStreamWindowSize = MaxStreamWindow
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
