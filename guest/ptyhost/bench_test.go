package ptyhost

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/creack/pty"

	"aicli.dev/aicli/guest/harness"
	"aicli.dev/aicli/guest/ptyapi"
)

// rawAdapter runs an arbitrary command, always reads as IDLE and sends
// messages as plain text plus Enter: it isolates the host's own overhead.
type rawAdapter struct {
	path string
	args []string
}

func (a rawAdapter) Name() string                             { return "raw" }
func (a rawAdapter) Capabilities() harness.Capabilities       { return harness.Capabilities{} }
func (a rawAdapter) Delivery() harness.DeliveryPolicy         { return harness.DeliveryPolicy{} }
func (a rawAdapter) Quota(ptyapi.Screen) []ptyapi.QuotaMetric { return nil }
func (a rawAdapter) SessionStoreDir(home, _ string) string    { return home }
func (a rawAdapter) SeedFiles(harness.LaunchRequest) ([]harness.SeedFile, error) {
	return nil, nil
}
func (a rawAdapter) InstructionsFile(string) string { return "" }
func (a rawAdapter) Launch(harness.LaunchRequest) (harness.Launch, error) {
	return harness.Launch{Path: a.path, Args: a.args}, nil
}
func (a rawAdapter) Classify(ptyapi.Screen) (ptyapi.ExecutionStatus, bool) {
	return ptyapi.StatusIdle, true
}
func (a rawAdapter) FormatMessage(text string) []harness.Chunk {
	return []harness.Chunk{{Data: []byte(text + "\r")}}
}
func (a rawAdapter) DiscoverSession(string, string, time.Time) (string, bool, error) {
	return "", false, nil
}
func (a rawAdapter) SessionFile(string, string, string) (string, error) { return "", nil }
func (a rawAdapter) ParseTranscript(io.Reader) ([]harness.TranscriptEntry, error) {
	return nil, nil
}

func rawHost(b testing.TB, path string, args ...string) *Host {
	b.Helper()
	return rawHostWith(b, nil, path, args...)
}

// rawHostWith is rawHost with mod applied to the options first.
func rawHostWith(b testing.TB, mod func(*Options), path string, args ...string) *Host {
	b.Helper()
	reg, err := harness.NewRegistry(rawAdapter{path: path, args: args})
	if err != nil {
		b.Fatal(err)
	}
	dir := b.TempDir()
	opts := Options{Registry: reg, Home: filepath.Join(dir, "home"), WorkDir: dir}
	if mod != nil {
		mod(&opts)
	}
	h, err := New(opts)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = h.Close() })
	if _, err := h.Start(context.Background(), ptyapi.StartRequest{Harness: "raw"}); err != nil {
		b.Fatal(err)
	}
	return h
}

// waitMarker reads r until marker has been seen.
func waitMarker(r io.Reader, buf *bytes.Buffer, marker []byte) error {
	chunk := make([]byte, 32<<10)
	for !bytes.Contains(buf.Bytes(), marker) {
		n, err := r.Read(chunk)
		buf.Write(chunk[:n])
		if err != nil {
			return err
		}
	}
	// Keep only the tail a marker could still straddle.
	if buf.Len() > 1<<16 {
		tail := append([]byte(nil), buf.Bytes()[buf.Len()-64:]...)
		buf.Reset()
		buf.Write(tail)
	}
	return nil
}

// BenchmarkSendMessageOverhead compares the time from handing a message to the
// guest until its bytes are at the PTY (the line discipline's echo comes back)
// for a direct PTY write and for SendMessage through the queue, with the echo
// read through Subscribe.
func BenchmarkSendMessageOverhead(b *testing.B) {
	b.Run("direct-pty-write", func(b *testing.B) {
		cmd := exec.Command("/bin/cat")
		ptmx, err := pty.Start(cmd)
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
			_ = ptmx.Close()
		})
		var buf bytes.Buffer
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			m := fmt.Sprintf("m%d.", i)
			if _, err := ptmx.Write([]byte(m + "\r")); err != nil {
				b.Fatal(err)
			}
			if err := waitMarker(ptmx, &buf, []byte(m)); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("send-message", func(b *testing.B) {
		h := rawHost(b, "/bin/cat")
		stream, err := h.Subscribe(context.Background())
		if err != nil {
			b.Fatal(err)
		}
		defer stream.Close()
		ctx := context.Background()
		var buf bytes.Buffer
		// cat prints nothing until input arrives: an echo gives the host a
		// first screen to read IDLE from.
		if err := h.SendString(ctx, "ready\r"); err != nil {
			b.Fatal(err)
		}
		if err := waitMarker(stream, &buf, []byte("ready")); err != nil {
			b.Fatal(err)
		}
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			m := fmt.Sprintf("m%d.", i)
			if err := h.SendMessage(ctx, m); err != nil {
				b.Fatal(err)
			}
			if err := waitMarker(stream, &buf, []byte(m)); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkPTYThroughput compares reading a CLI's output straight from the PTY
// with reading it through the host (emulator, status, fan-out) via Subscribe.
func BenchmarkPTYThroughput(b *testing.B) {
	dir := b.TempDir()
	file := filepath.Join(dir, "out.txt")
	line := strings.Repeat("the quick brown fox jumps over the lazy dog ", 2) + "\n"
	data := bytes.Repeat([]byte(line), (8<<20)/len(line))
	if err := os.WriteFile(file, data, 0o644); err != nil {
		b.Fatal(err)
	}
	script := "read go; cat " + file
	b.Run("raw-pty", func(b *testing.B) {
		b.SetBytes(int64(len(data)))
		for i := 0; i < b.N; i++ {
			cmd := exec.Command("/bin/sh", "-c", script)
			ptmx, err := pty.Start(cmd)
			if err != nil {
				b.Fatal(err)
			}
			if _, err := ptmx.Write([]byte("go\r")); err != nil {
				b.Fatal(err)
			}
			n, err := io.Copy(io.Discard, ptmx)
			if err != nil && !isEIO(err) {
				b.Fatal(err)
			}
			if n < int64(len(data)) {
				b.Fatalf("read %d of %d bytes", n, len(data))
			}
			_ = cmd.Wait()
			_ = ptmx.Close()
		}
	})
	b.Run("subscribe", func(b *testing.B) {
		b.SetBytes(int64(len(data)))
		for i := 0; i < b.N; i++ {
			h := rawHost(b, "/bin/sh", "-c", script)
			stream, err := h.Subscribe(context.Background())
			if err != nil {
				b.Fatal(err)
			}
			if err := h.SendString(context.Background(), "go\r"); err != nil {
				b.Fatal(err)
			}
			n, err := io.Copy(io.Discard, stream)
			if err != nil && !errors.Is(err, io.EOF) {
				b.Fatal(err)
			}
			if n < int64(len(data)) {
				b.Fatalf("read %d of %d bytes", n, len(data))
			}
			_ = h.Close()
		}
	})
}

// BenchmarkEmulatorFrames measures the emulator alone on TUI-style output:
// full 120x40 frames drawn with cursor positioning and colours (how the real
// CLIs paint), versus plain scrolling text lines.
func BenchmarkEmulatorFrames(b *testing.B) {
	var frame bytes.Buffer
	frame.WriteString("\x1b[H\x1b[2J")
	for r := 1; r <= 40; r++ {
		fmt.Fprintf(&frame, "\x1b[%d;1H\x1b[38;5;%dm%s\x1b[0m", r, r, strings.Repeat("x", 110))
	}
	scroll := bytes.Repeat([]byte(strings.Repeat("y", 100)+"\r\n"), 40)
	for _, c := range []struct {
		name string
		data []byte
	}{{"positioned-frame", frame.Bytes()}, {"scrolling-lines", scroll}} {
		b.Run(c.name, func(b *testing.B) {
			emu := newTestEmulator()
			b.SetBytes(int64(len(c.data)))
			for i := 0; i < b.N; i++ {
				_, _ = emu.Write(c.data)
			}
		})
	}
}
