package transcript

import (
	"context"
	"sync"
	"testing"
	"time"

	"aicli.dev/aicli/guest/ptyapi"
	"aicli.dev/aicli/internal/transcript/transcriptwire"
)

// memLog is an in-memory Log for pump tests (the seam; the real one is store-backed).
type memLog struct {
	mu      sync.Mutex
	entries map[string][]transcriptwire.Entry
}

func (m *memLog) Append(_ context.Context, uid string, in []transcriptwire.Entry) ([]transcriptwire.Entry, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.entries == nil {
		m.entries = map[string][]transcriptwire.Entry{}
	}
	var out []transcriptwire.Entry
	for _, e := range in {
		dup := false
		for _, c := range m.entries[uid] {
			dup = dup || (e.NativeID != "" && c.NativeID == e.NativeID)
		}
		if dup {
			continue
		}
		e.Cursor = int64(len(m.entries[uid]) + 1)
		m.entries[uid] = append(m.entries[uid], e)
		out = append(out, e)
	}
	return out, nil
}

func (m *memLog) Read(_ context.Context, uid string, from int64, limit int) ([]transcriptwire.Entry, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []transcriptwire.Entry
	for _, e := range m.entries[uid] {
		if e.Cursor >= from && len(out) < limit {
			out = append(out, e)
		}
	}
	return out, nil
}

func (m *memLog) Subscribe(context.Context, string, int64) (<-chan transcriptwire.Entry, error) {
	return nil, nil
}

func (m *memLog) HasNative(_ context.Context, uid, native string) (bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, c := range m.entries[uid] {
		if c.NativeID == native {
			return true, nil
		}
	}
	return false, nil
}

type replay []ptyapi.TranscriptEntry

func (r replay) FollowTranscript(_ context.Context, fn func(ptyapi.TranscriptEntry) error) error {
	for _, e := range r {
		if err := fn(e); err != nil {
			return err
		}
	}
	return nil
}

func TestPumpAttributesAndCommitsEachLineOnce(t *testing.T) {
	log := &memLog{}
	attr := &Attribution{}
	p := &Pump{Log: log, Attribution: attr}
	now := time.Now()
	native := replay{
		{ID: "u1", Role: ptyapi.RoleUser, Text: "typed by a person", Timestamp: now},
		{ID: "a1", Role: ptyapi.RoleAssistant, Text: "reply one", Timestamp: now},
		{ID: "u2", Role: ptyapi.RoleUser, Text: "advice from the monitor\n", Timestamp: now},
		{ID: "s1", Role: ptyapi.RoleSystem, Text: "internal", Timestamp: now},
		{ID: "t1", Role: ptyapi.RoleTool, Text: "ls output", Timestamp: now},
	}
	attr.Expect("c1", "injected:mon", "advice from the monitor")
	if err := p.Run(context.Background(), "c1", native); err != nil {
		t.Fatal(err)
	}
	// A reconnect re-reads the whole native store: nothing is committed twice,
	// and a repeated identical message is not mis-claimed.
	attr.Expect("c1", "injected:mon", "typed by a person")
	if err := p.Run(context.Background(), "c1", append(native, ptyapi.TranscriptEntry{ID: "a2", Role: ptyapi.RoleAssistant, Text: "reply two"})); err != nil {
		t.Fatal(err)
	}
	got, _ := log.Read(context.Background(), "c1", 1, 100)
	want := []struct{ speaker, text string }{
		{transcriptwire.SpeakerUnattributed, "typed by a person"}, {transcriptwire.SpeakerAgent, "reply one"}, {"injected:mon", "advice from the monitor\n"},
		{transcriptwire.SpeakerTool, "ls output"}, {transcriptwire.SpeakerAgent, "reply two"},
	}
	if len(got) != len(want) {
		t.Fatalf("entries: %+v", got)
	}
	for i, w := range want {
		if got[i].Speaker != w.speaker || got[i].Text != w.text || got[i].Cursor != int64(i+1) {
			t.Errorf("entry %d = %+v, want %s %q", i, got[i], w.speaker, w.text)
		}
	}
	if s := attr.Claim("c1", "typed by a person"); s != "injected:mon" {
		t.Errorf("pending expectation consumed by a re-read line: %q", s)
	}
}
