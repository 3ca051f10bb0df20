package capability

import (
	"fmt"
	"math/rand"
	"testing"
	"time"
)

// TestCapPropertyAttenuationNeverWidens mints random claims, attenuates
// them through random chains and checks that the verified claims are never
// wider than the root's and that whatever the root refuses every attenuated
// token refuses too.
func TestCapPropertyAttenuationNeverWidens(t *testing.T) {
	k := openKeyring(t, t.TempDir())
	pick := func(r *rand.Rand, xs ...string) string { return xs[r.Intn(len(xs))] }
	randParams := func(r *rand.Rand, names string) map[string]string {
		ps := map[string]string{}
		for range r.Intn(4) {
			ps[string(names[r.Intn(len(names))])] = pick(r, "x", "y", "z w")
		}
		return ps
	}
	for seed := range int64(2000) {
		r := rand.New(rand.NewSource(seed))
		root := Claims{
			Namespace: pick(r, "ns-a", "ns-b"), Agent: pick(r, "ada", "bob"), Conversation: pick(r, "c1", "c2"),
			Holder: pick(r, "h1", "h2"), Grant: pick(r, "g1", "g2"), GrantGeneration: r.Int63n(5),
			Tool: pick(r, "greet", "fetch"), Params: randParams(r, "abc"),
			Expires:      t0.Add(time.Duration(1+r.Intn(7200)) * time.Second),
			CallsPerHour: r.Intn(3) * r.Intn(100),
		}
		rootTok, err := k.Mint(root)
		if err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
		tok := rootTok
		minExpires, minCalls := root.Expires, root.CallsPerHour
		for range r.Intn(6) {
			a := Attenuation{CallsPerHour: r.Intn(3) * r.Intn(200), Params: randParams(r, "abcde")}
			if r.Intn(2) == 0 {
				a.Expires = t0.Add(time.Duration(r.Intn(4*7200)-3600) * time.Second)
				if a.Expires.Before(minExpires) {
					minExpires = a.Expires
				}
			}
			if a.CallsPerHour > 0 && (minCalls == 0 || a.CallsPerHour < minCalls) {
				minCalls = a.CallsPerHour
			}
			if tok, err = Attenuate(tok, a); err != nil {
				t.Fatalf("seed %d: %v", seed, err)
			}
		}

		// The root's own presentation first, then random ones.
		presentations := []Presentation{presentationFor(root)}
		for range 4 {
			p := presentationFor(root)
			switch r.Intn(5) {
			case 0:
				p.Namespace = pick(r, "ns-a", "ns-b")
			case 1:
				p.Conversation = pick(r, "c1", "c2")
			case 2:
				p.Holder = pick(r, "h1", "h2")
			case 3:
				p.Tool = pick(r, "greet", "fetch")
			}
			p.Params = randParams(r, "abcde")
			p.Now = t0.Add(time.Duration(r.Intn(3*7200)-600) * time.Second)
			presentations = append(presentations, p)
		}
		for i, p := range presentations {
			_, rootErr := k.Verify(rootTok, p)
			v, err := k.Verify(tok, p)
			where := fmt.Sprintf("seed %d presentation %d %+v", seed, i, p)
			if i == 0 && rootErr != nil {
				t.Fatalf("%s: root refuses its own presentation: %v", where, rootErr)
			}
			if rootErr != nil && err == nil {
				t.Fatalf("%s: root refuses (%v) but the attenuated token passes", where, rootErr)
			}
			if err != nil {
				if reasonOf(err) == "" {
					t.Fatalf("%s: not a refusal: %v", where, err)
				}
				continue
			}
			got := v.Claims
			if got.Expires.After(root.Expires) || !got.Expires.Equal(minExpires) {
				t.Fatalf("%s: expires %v, root %v, want %v", where, got.Expires, root.Expires, minExpires)
			}
			if root.CallsPerHour > 0 && (got.CallsPerHour == 0 || got.CallsPerHour > root.CallsPerHour) ||
				got.CallsPerHour != minCalls {
				t.Fatalf("%s: calls-per-hour %d, root %d, want %d", where, got.CallsPerHour, root.CallsPerHour, minCalls)
			}
			for name, value := range root.Params {
				if got.Params[name] != value {
					t.Fatalf("%s: pin %s=%q lost (%q)", where, name, value, got.Params[name])
				}
			}
			if got.Namespace != root.Namespace || got.Conversation != root.Conversation || got.Holder != root.Holder ||
				got.Tool != root.Tool || got.Agent != root.Agent || got.Grant != root.Grant ||
				got.GrantGeneration != root.GrantGeneration {
				t.Fatalf("%s: identity %+v, root %+v", where, got, root)
			}
		}
	}
}
