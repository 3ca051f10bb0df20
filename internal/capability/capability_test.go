package capability

import (
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"gopkg.in/macaroon.v2"
)

var t0 = time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)

func openKeyring(t testing.TB, dir string) *Keyring {
	t.Helper()
	k, err := OpenKeyring(dir)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func testClaims() Claims {
	return Claims{
		Namespace: "team-a", Agent: "ada", Conversation: "conv-uid-1", Holder: "SHA256:guestkey",
		Grant: "greet", GrantGeneration: 3, Tool: "greet",
		Params:  map[string]string{"region": "eu", "mode": "read only"},
		Expires: t0.Add(time.Minute), CallsPerHour: 100,
	}
}

func presentationFor(c Claims) Presentation {
	return Presentation{Namespace: c.Namespace, Conversation: c.Conversation, Holder: c.Holder, Tool: c.Tool, Now: t0}
}

func mint(t testing.TB, k *Keyring, c Claims) string {
	t.Helper()
	tok, err := k.Mint(c)
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

func reasonOf(err error) Reason {
	var r *Refusal
	if errors.As(err, &r) {
		return r.Reason
	}
	return ""
}

// withCaveats re-signs tok's id and caveats plus extra under key: a token
// as its key holder would make it.
func withCaveats(t *testing.T, tok string, key []byte, extra ...string) string {
	t.Helper()
	m, ref := decode(tok)
	if ref != nil {
		t.Fatal(ref)
	}
	n, err := macaroon.New(key, m.Id(), "", macaroon.V2)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range m.Caveats() {
		_ = n.AddFirstPartyCaveat(c.Id)
	}
	for _, c := range extra {
		_ = n.AddFirstPartyCaveat([]byte(c))
	}
	out, err := encode(n)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func TestCapMintVerifyRoundTrip(t *testing.T) {
	k := openKeyring(t, t.TempDir())
	c := testClaims()
	tok := mint(t, k, c)
	if strings.ContainsAny(tok, "+/=") {
		t.Fatalf("token %q is not raw base64url", tok)
	}
	v, err := k.Verify(tok, presentationFor(c))
	if err != nil {
		t.Fatal(err)
	}
	if !v.Claims.Expires.Equal(c.Expires) {
		t.Fatalf("expires %v, want %v", v.Claims.Expires, c.Expires)
	}
	v.Claims.Expires = c.Expires
	if got, want := v.Claims, c; got.Namespace != want.Namespace || got.Agent != want.Agent ||
		got.Conversation != want.Conversation || got.Holder != want.Holder || got.Grant != want.Grant ||
		got.GrantGeneration != want.GrantGeneration || got.Tool != want.Tool || got.CallsPerHour != want.CallsPerHour ||
		len(got.Params) != 2 || got.Params["region"] != "eu" || got.Params["mode"] != "read only" {
		t.Fatalf("claims %+v, want %+v", got, want)
	}
	if _, err := hex.DecodeString(v.ID); err != nil || len(v.ID) != idLen {
		t.Fatalf("id %q", v.ID)
	}
	// Passing a pinned parameter with its own value is fine; a second mint has another id.
	p := presentationFor(c)
	p.Params = map[string]string{"region": "eu", "free": "anything"}
	if _, err := k.Verify(tok, p); err != nil {
		t.Fatal(err)
	}
	v2, err := k.Verify(mint(t, k, c), presentationFor(c))
	if err != nil || v2.ID == v.ID {
		t.Fatalf("second mint: id %q (first %q), %v", v2.ID, v.ID, err)
	}
	// Attenuated tokens keep the root's id.
	att, err := Attenuate(tok, Attenuation{CallsPerHour: 5})
	if err != nil {
		t.Fatal(err)
	}
	if va, err := k.Verify(att, presentationFor(c)); err != nil || va.ID != v.ID {
		t.Fatalf("attenuated: id %q, %v", va.ID, err)
	}
}

func TestCapMintRejectsIncompleteClaims(t *testing.T) {
	k := openKeyring(t, t.TempDir())
	for name, edit := range map[string]func(*Claims){
		"bad namespace":  func(c *Claims) { c.Namespace = "../etc" },
		"no agent":       func(c *Claims) { c.Agent = "" },
		"no conv":        func(c *Claims) { c.Conversation = "" },
		"no holder":      func(c *Claims) { c.Holder = "" },
		"no grant":       func(c *Claims) { c.Grant = "" },
		"no tool":        func(c *Claims) { c.Tool = "" },
		"no expiry":      func(c *Claims) { c.Expires = time.Time{} },
		"negative gen":   func(c *Claims) { c.GrantGeneration = -1 },
		"negative calls": func(c *Claims) { c.CallsPerHour = -1 },
		"param with =":   func(c *Claims) { c.Params = map[string]string{"a=b": "c"} },
		"empty param":    func(c *Claims) { c.Params = map[string]string{"": "c"} },
	} {
		c := testClaims()
		edit(&c)
		if _, err := k.Mint(c); err == nil {
			t.Errorf("%s: minted", name)
		}
	}
}

func TestCapRefusals(t *testing.T) {
	dir := t.TempDir()
	k := openKeyring(t, dir)
	c := testClaims()
	tok := mint(t, k, c)
	other := c
	other.Namespace = "team-b"
	otherNS := mint(t, k, other)
	foreign := mint(t, openKeyring(t, t.TempDir()), c)
	key := k.ns[c.Namespace].current.key
	conflicting, err := Attenuate(tok, Attenuation{Params: map[string]string{"region": "us"}})
	if err != nil {
		t.Fatal(err)
	}

	p := presentationFor(c)
	with := func(edit func(*Presentation)) Presentation {
		q := p
		edit(&q)
		return q
	}
	tests := []struct {
		name  string
		token string
		p     Presentation
		want  Reason
	}{
		{"empty", "", p, ReasonMalformed},
		{"not base64", "!!!", p, ReasonMalformed},
		{"padded base64", tok + "==", p, ReasonMalformed},
		{"garbage", "AgEB", p, ReasonMalformed},
		{"too long", strings.Repeat("A", MaxTokenLen+1), p, ReasonMalformed},
		{"trailing bytes", func() string { d, _ := encoding.DecodeString(tok); return encoding.EncodeToString(append(d, 0)) }(), p, ReasonMalformed},
		{"unknown key", foreign, p, ReasonUnknownKey},
		{"bad signature", withCaveats(t, tok, make([]byte, 32)), p, ReasonBadSignature},
		{"wrong namespace", otherNS, p, ReasonWrongNamespace},
		{"wrong conversation", tok, with(func(q *Presentation) { q.Conversation = "conv-uid-2" }), ReasonWrongConversation},
		{"wrong holder", tok, with(func(q *Presentation) { q.Holder = "SHA256:other" }), ReasonWrongHolder},
		{"wrong tool", tok, with(func(q *Presentation) { q.Tool = "rm" }), ReasonWrongTool},
		{"expired at expiry", tok, with(func(q *Presentation) { q.Now = c.Expires }), ReasonExpired},
		{"expired after", tok, with(func(q *Presentation) { q.Now = c.Expires.Add(time.Hour) }), ReasonExpired},
		{"param mismatch", tok, with(func(q *Presentation) { q.Params = map[string]string{"region": "us"} }), ReasonParamMismatch},
		{"conflicting pins", conflicting, p, ReasonParamMismatch},
		{"unknown caveat", withCaveats(t, tok, key, "colour blue"), p, ReasonUnknownCaveat},
		{"caveat without value", withCaveats(t, tok, key, "admin"), p, ReasonUnknownCaveat},
		{"bad expires", withCaveats(t, tok, key, "expires tomorrow"), p, ReasonMalformed},
		{"zero calls", withCaveats(t, tok, key, "calls-per-hour 0"), p, ReasonMalformed},
		{"second agent", withCaveats(t, tok, key, "agent bob"), p, ReasonMalformed},
		{"second conv", withCaveats(t, tok, key, "conv conv-uid-2"), p, ReasonWrongConversation},
		{"forged caveat before bad signature", withCaveats(t, tok, make([]byte, 32), "colour blue"), p, ReasonBadSignature},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := k.Verify(tt.token, tt.p)
			if got := reasonOf(err); got != tt.want {
				t.Fatalf("reason %q (%v), want %q", got, err, tt.want)
			}
		})
	}
	// A macaroon missing the required caveats is refused even when signed.
	m, _ := decode(tok)
	bare, _ := macaroon.New(key, m.Id(), "", macaroon.V2)
	_ = bare.AddFirstPartyCaveat([]byte("ns team-a"))
	bareTok, _ := encode(bare)
	if _, err := k.Verify(bareTok, p); reasonOf(err) != ReasonMalformed {
		t.Fatalf("bare macaroon: %v", err)
	}
}

func TestCapAttenuateNarrows(t *testing.T) {
	k := openKeyring(t, t.TempDir())
	c := testClaims()
	tok := mint(t, k, c)
	att, err := Attenuate(tok, Attenuation{Expires: t0.Add(10 * time.Second), CallsPerHour: 10,
		Params: map[string]string{"bucket": "b1"}})
	if err != nil {
		t.Fatal(err)
	}
	// A later expiry and a larger cap do not widen it.
	att, err = Attenuate(att, Attenuation{Expires: t0.Add(time.Hour), CallsPerHour: 1000})
	if err != nil {
		t.Fatal(err)
	}
	v, err := k.Verify(att, presentationFor(c))
	if err != nil {
		t.Fatal(err)
	}
	if !v.Claims.Expires.Equal(t0.Add(10*time.Second)) || v.Claims.CallsPerHour != 10 ||
		v.Claims.Params["bucket"] != "b1" || v.Claims.Params["region"] != "eu" {
		t.Fatalf("claims %+v", v.Claims)
	}
	p := presentationFor(c)
	p.Now = t0.Add(20 * time.Second)
	if _, err := k.Verify(tok, p); err != nil {
		t.Fatalf("root at +20s: %v", err)
	}
	if _, err := k.Verify(att, p); reasonOf(err) != ReasonExpired {
		t.Fatalf("attenuated at +20s: %v", err)
	}
	p = presentationFor(c)
	p.Params = map[string]string{"bucket": "b2"}
	if _, err := k.Verify(att, p); reasonOf(err) != ReasonParamMismatch {
		t.Fatalf("attenuated pin: %v", err)
	}
	if _, err := Attenuate(tok, Attenuation{CallsPerHour: -1}); err == nil {
		t.Fatal("negative calls accepted")
	}
	if _, err := Attenuate("!!", Attenuation{}); reasonOf(err) != ReasonMalformed {
		t.Fatalf("attenuating garbage: %v", err)
	}
}

func TestCapKeyRotation(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "capkeys")
	k := openKeyring(t, dir)
	c := testClaims()
	c.Expires = t0.Add(48 * time.Hour)
	oldTok := mint(t, k, c)
	before, err := k.List(c.Namespace)
	if err != nil || len(before) != 1 || !before[0].Current || before[0].RetiresAt != nil {
		t.Fatalf("before rotation: %+v, %v", before, err)
	}
	k.now = func() time.Time { return t0 }
	info, err := k.Rotate(c.Namespace, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if !info.Current || info.ID == before[0].ID {
		t.Fatalf("rotated key %+v", info)
	}
	newTok := mint(t, k, c)
	if !strings.HasPrefix(mustID(t, newTok), info.ID) {
		t.Fatal("minted with the old key after rotation")
	}
	at := func(d time.Duration) Presentation {
		p := presentationFor(c)
		p.Now = t0.Add(d)
		return p
	}
	check := func(k *Keyring) {
		t.Helper()
		if _, err := k.Verify(oldTok, at(30*time.Minute)); err != nil {
			t.Fatalf("old token within grace: %v", err)
		}
		if _, err := k.Verify(oldTok, at(time.Hour)); reasonOf(err) != ReasonUnknownKey {
			t.Fatalf("old token after grace: %v", err)
		}
		if _, err := k.Verify(newTok, at(2*time.Hour)); err != nil {
			t.Fatalf("new token: %v", err)
		}
	}
	check(k)
	reopened := openKeyring(t, dir)
	reopened.now = k.now
	check(reopened)
	list, err := reopened.List(c.Namespace)
	if err != nil || len(list) != 2 || list[0].Current || list[0].RetiresAt == nil ||
		!list[0].RetiresAt.Equal(t0.Add(time.Hour)) || !list[1].Current || list[1].ID != info.ID {
		t.Fatalf("list after rotation: %+v, %v", list, err)
	}
	if got := reopened.ListNamespaces(); len(got) != 1 || got[0] != c.Namespace {
		t.Fatalf("namespaces %v", got)
	}
	for p, want := range map[string]os.FileMode{dir: 0o700, filepath.Join(dir, c.Namespace+".json"): 0o600} {
		st, err := os.Stat(p)
		if err != nil || st.Mode().Perm() != want {
			t.Fatalf("%s: mode %v, want %v (%v)", p, st.Mode().Perm(), want, err)
		}
	}
	// After the grace the old key is no longer listed, and the next write drops it.
	reopened.now = func() time.Time { return t0.Add(2 * time.Hour) }
	if list, _ := reopened.List(c.Namespace); len(list) != 1 || list[0].ID != info.ID {
		t.Fatalf("list after grace: %+v", list)
	}
	if _, err := reopened.Rotate(c.Namespace, time.Minute); err != nil {
		t.Fatal(err)
	}
	f, _, err := readKeyFile(filepath.Join(dir, c.Namespace+".json"))
	if err != nil || len(f.Keys) != 2 || f.Keys[0].ID != info.ID {
		t.Fatalf("file after second rotation: %+v, %v", f.Keys, err)
	}
	if _, err := reopened.Verify(newTok, at(2*time.Hour)); err != nil {
		t.Fatalf("token of a key within its grace: %v", err)
	}
	// Grace zero: every previous key stops at once and leaves the file.
	if _, err := reopened.Rotate(c.Namespace, 0); err != nil {
		t.Fatal(err)
	}
	if f, _, err := readKeyFile(filepath.Join(dir, c.Namespace+".json")); err != nil || len(f.Keys) != 1 {
		t.Fatalf("file after rotation with no grace: %+v, %v", f.Keys, err)
	}
	if _, err := reopened.Verify(newTok, at(2*time.Hour)); reasonOf(err) != ReasonUnknownKey {
		t.Fatalf("token of a key rotated out with no grace: %v", err)
	}
	if _, err := k.Rotate(c.Namespace, -time.Second); err == nil {
		t.Fatal("negative grace accepted")
	}
	if _, err := k.Rotate("Bad/NS", time.Hour); err == nil {
		t.Fatal("bad namespace accepted")
	}
}

// TestCapKeyRotationByAnotherProcess checks that a keyring notices key files
// rewritten by another Keyring on the same dir (the capkey command).
func TestCapKeyRotationByAnotherProcess(t *testing.T) {
	dir := t.TempDir()
	daemon, cli := openKeyring(t, dir), openKeyring(t, dir)
	c := testClaims()
	c.Expires = time.Now().Add(time.Hour)
	oldTok := mint(t, daemon, c)
	if _, err := cli.Verify(oldTok, Presentation{Namespace: c.Namespace, Conversation: c.Conversation,
		Holder: c.Holder, Tool: c.Tool}); err != nil {
		t.Fatalf("second keyring verifying a key it had not loaded: %v", err)
	}
	info, err := cli.Rotate(c.Namespace, 0)
	if err != nil {
		t.Fatal(err)
	}
	p := Presentation{Namespace: c.Namespace, Conversation: c.Conversation, Holder: c.Holder, Tool: c.Tool}
	if _, err := daemon.Verify(oldTok, p); reasonOf(err) != ReasonUnknownKey {
		t.Fatalf("old token after another process rotated with no grace: %v", err)
	}
	newTok := mint(t, daemon, c)
	if !strings.HasPrefix(mustID(t, newTok), info.ID) {
		t.Fatalf("daemon minted under %s, want the rotated key %s", mustID(t, newTok)[:16], info.ID)
	}
}

func mustID(t *testing.T, tok string) string {
	t.Helper()
	m, ref := decode(tok)
	if ref != nil {
		t.Fatal(ref)
	}
	return string(m.Id())
}

func TestCapTamperOneByte(t *testing.T) {
	k := openKeyring(t, t.TempDir())
	c := testClaims()
	tok := mint(t, k, c)
	att, err := Attenuate(tok, Attenuation{CallsPerHour: 3, Params: map[string]string{"x": "y"}})
	if err != nil {
		t.Fatal(err)
	}
	p := presentationFor(c)
	for _, tok := range []string{tok, att} {
		if _, err := k.Verify(tok, p); err != nil {
			t.Fatal(err)
		}
		data, err := encoding.DecodeString(tok)
		if err != nil {
			t.Fatal(err)
		}
		for i := range data {
			for _, flip := range []byte{0x01, 0x80, 0xff} {
				bad := append([]byte(nil), data...)
				bad[i] ^= flip
				if _, err := k.Verify(encoding.EncodeToString(bad), p); reasonOf(err) == "" {
					t.Fatalf("byte %d ^ %#x: accepted (%v)", i, flip, err)
				}
			}
		}
		for i := range tok {
			for _, r := range []byte{'A', 'z', '_'} {
				if tok[i] == r {
					continue
				}
				bad := tok[:i] + string(r) + tok[i+1:]
				if _, err := k.Verify(bad, p); reasonOf(err) == "" {
					t.Fatalf("char %d -> %c: accepted (%v)", i, r, err)
				}
			}
		}
	}
}

func TestCapVerifyConcurrent(t *testing.T) {
	k := openKeyring(t, t.TempDir())
	c := testClaims()
	c.Expires = time.Now().Add(time.Hour)
	tok := mint(t, k, c)
	p := presentationFor(c)
	p.Now = time.Time{}
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for g := range 8 {
		wg.Go(func() {
			for i := range 200 {
				if _, err := k.Verify(tok, p); err != nil {
					errs <- err
					return
				}
				if g == 0 && i%50 == 0 {
					if _, err := k.Rotate(c.Namespace, time.Hour); err != nil {
						errs <- err
						return
					}
				}
				if _, err := k.Mint(c); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
}

func BenchmarkMintVerify(b *testing.B) {
	k := openKeyring(b, b.TempDir())
	c := testClaims()
	p := presentationFor(c)
	p.Params = map[string]string{"region": "eu"}
	b.ReportAllocs()
	for b.Loop() {
		tok, err := k.Mint(c)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := k.Verify(tok, p); err != nil {
			b.Fatal(err)
		}
	}
}
