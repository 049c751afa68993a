package evidence

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"runtime"
	"strings"
	"testing"
	"time"
)

func TestVerifyValidBundle(t *testing.T) {
	f := newFixture(t)
	for _, withDir := range []bool{false, true} {
		opts := VerifyOptions{}
		if withDir {
			opts.ArtifactsDir = f.writeArtifacts(t)
		}
		res := f.verify(opts)
		out, _ := json.MarshalIndent(res, "", "  ")
		if !res.Valid {
			t.Fatalf("valid fixture rejected:\n%s", out)
		}
		for _, s := range res.Steps {
			if s.Status != StepPassed && !(s.Name == "artifacts" && !withDir && s.Status == StepSkipped) {
				t.Errorf("step %s: %s", s.Name, s.Status)
			}
		}
		if withDir && (res.Artifacts == nil || res.Artifacts.Count != 6) {
			t.Errorf("artifacts: %+v", res.Artifacts)
		}
		t.Logf("%s", out)
	}
}

// allocated returns the bytes the heap handed out while fn ran. Verify
// starts no goroutine before the signature passed and the test runs alone,
// so the figure is Verify's own and does not vary from run to run by more
// than the runtime's bookkeeping.
func allocated(fn func()) uint64 {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	fn()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// TestVerifyAuthenticatesBeforeParsing is issue 13's S4: a large bundle no
// trusted key signed — a signature that does not verify, a stale signature
// over a changed payload, a key the trust document does not hold — is
// refused at the signature step, the steps after it did not run, and Verify
// allocated at most the bundle's size (the caller's copy of the bundle
// included, at most twice it). The same bundle correctly signed verifies
// and allocates several times its size, which shows the measure sees a
// parse when one happens.
func TestVerifyAuthenticatesBeforeParsing(t *testing.T) {
	f := bigFixture(t, 4900, 100)
	payload := payloadOf(t, f.bundle)
	if len(payload) < 64<<20 {
		t.Fatalf("the payload has %d bytes; the test needs at least 64 MiB", len(payload))
	}
	var bu Bundle
	if err := json.Unmarshal(f.bundle, &bu); err != nil {
		t.Fatal(err)
	}
	badSig := bu
	wrong := f.key.sign([]byte("another message"))
	badSig.DSSEEnvelope.Signatures = []Signature{{Sig: base64.StdEncoding.EncodeToString(wrong)}}
	stale := append([]byte(nil), payload...)
	i := bytes.Index(stale, []byte("TestHandler000042"))
	stale[i+len("TestHandler")] = '9' // still canonical, still a valid-looking statement
	other, _ := newKey(t, 0x77, fixNow.Add(-time.Hour), 48*time.Hour)
	unknown, err := signPayload(payload, other)
	if err != nil {
		t.Fatal(err)
	}
	marshal := func(b Bundle) []byte {
		out, err := json.Marshal(b)
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	for _, c := range []struct {
		name   string
		bundle []byte
		valid  bool
		msg    string
	}{
		{"correctly signed", f.bundle, true, ""},
		{"bad signature", marshal(badSig), false, "does not verify"},
		{"stale signature", withPayload(t, f.bundle, stale), false, "does not verify"},
		{"unknown key", unknown, false, "no trusted key"},
	} {
		t.Run(c.name, func(t *testing.T) {
			var res Result
			n := allocated(func() { res = Verify(c.bundle, f.trust, f.expectations, VerifyOptions{Now: fixNow}) })
			t.Logf("bundle %d bytes, payload %d bytes: Verify allocated %d bytes (%.2f× the bundle)",
				len(c.bundle), len(payload), n, float64(n)/float64(len(c.bundle)))
			if c.valid {
				if !res.Valid {
					t.Fatalf("%s: %s", res.Reason, res.Message)
				}
				if n <= uint64(len(c.bundle)) {
					t.Fatalf("a full verification allocated only %d bytes: the measure is not seeing the parse", n)
				}
				return
			}
			if res.Valid || res.Reason != ReasonSignature || !strings.Contains(res.Message, c.msg) {
				t.Fatalf("got valid=%v %s: %s; want signature: …%s…", res.Valid, res.Reason, res.Message, c.msg)
			}
			after := false
			for _, s := range res.Steps {
				switch {
				case s.Name == "signature":
					after = true
					if s.Status != StepFailed {
						t.Errorf("step signature: %s", s.Status)
					}
				case after && s.Status != StepNotRun:
					t.Errorf("step %s after the signature: %s, want %s", s.Name, s.Status, StepNotRun)
				case !after && s.Status != StepPassed:
					t.Errorf("step %s before the signature: %s", s.Name, s.Status)
				}
			}
			if !after {
				t.Fatalf("no signature step in %+v", res.Steps)
			}
			if n > uint64(len(c.bundle)) {
				t.Errorf("refusing the bundle allocated %d bytes, more than its %d", n, len(c.bundle))
			}
		})
	}
}
