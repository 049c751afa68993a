package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/runmill/verify/pkg/evidence"
	"github.com/runmill/verify/pkg/rmerr"
)

// evidenceVerifyOptions are evidence verify's flags.
type evidenceVerifyOptions struct {
	bundle, trust, expectations string
	artifactsDir                string
	now                         time.Time // zero: the current time
}

func newEvidenceVerifyCmd(runF func(context.Context, IO, *evidenceVerifyOptions) error) *command {
	if runF == nil {
		runF = runEvidenceVerify
	}
	c := &command{
		name:    "evidence verify",
		usage:   "BUNDLE --trust F --expectations F [--artifacts-dir D] [--now TIME]",
		summary: "verify a signed evidence bundle offline",
		long: `
Checks BUNDLE ("-" reads standard input) without a database, daemon,
credential or checkout: the strict bundle format, the trust document and its
expiry, the signature, the canonical payload, the key's window at the signed
issued_at, exact bindings to the expectations (your own observations of the
candidate, from 'runmill evidence expect'), the required evidence, and the
verdict recomputed from the signed records. With --artifacts-dir every
referenced stdout, stderr and report body is re-hashed from the
content-addressed store (files sha256/<hex>); terminal bundles refuse it.

Prints one JSON verdict on stdout and nothing else. "reason" names the
first step that failed (docs/evidence.md § Reason codes).

Exit status: 0 valid, 1 invalid (any reason), 2 usage.`,
	}
	c.run = func(ctx context.Context, s IO, args []string) error {
		o := &evidenceVerifyOptions{}
		var now string
		fs := newFlags(c, s)
		fs.StringVar(&o.trust, "trust", "", "trust document (runmill.asf-evidence-trust/v1)")
		fs.StringVar(&o.expectations, "expectations", "", "expectations document (runmill.asf-evidence-expectations/v1 or …terminal…)")
		fs.StringVar(&o.artifactsDir, "artifacts-dir", "", "content-addressed artifact store to re-hash (delivery bundles only)")
		fs.StringVar(&now, "now", "", "verify as of this RFC 3339 time instead of the current time")
		if err := fs.parse(args); err != nil {
			return err
		}
		if err := fs.required("trust", "expectations"); err != nil {
			return err
		}
		if len(fs.pos) != 1 {
			return rmerr.New(rmerr.Usage, "expected exactly one BUNDLE, got %d", len(fs.pos)).WithHint("run '%s --help'", fs.Name())
		}
		o.bundle = fs.pos[0]
		if now != "" {
			t, err := time.Parse(time.RFC3339Nano, now)
			if err != nil {
				return rmerr.New(rmerr.Usage, "--now %q is not an RFC 3339 time", now).InField("--now").
					WithHint("write it like 2026-03-01T12:00:00Z")
			}
			o.now = t
		}
		return runF(ctx, s, o)
	}
	return c
}

// runEvidenceVerify verifies one bundle and prints the verdict as JSON.
func runEvidenceVerify(_ context.Context, s IO, o *evidenceVerifyOptions) error {
	if o.artifactsDir != "" {
		if st, err := os.Stat(o.artifactsDir); err != nil || !st.IsDir() {
			return rmerr.New(rmerr.Usage, "--artifacts-dir %q is not a directory", o.artifactsDir).InField("--artifacts-dir").
				WithHint("pass the directory that holds sha256/<hex> artifact files")
		}
	}
	// Inputs are read up to one byte past their cap, so an oversized input
	// costs at most its cap in memory and Verify reports it as input-size.
	l := evidence.DefaultLimits
	bundle, err := readCapped(s.In, o.bundle, l.MaxBundleBytes, "BUNDLE")
	if err != nil {
		return err
	}
	trust, err := readCapped(s.In, o.trust, l.MaxTrustBytes, "--trust")
	if err != nil {
		return err
	}
	expect, err := readCapped(s.In, o.expectations, l.MaxExpectationsBytes, "--expectations")
	if err != nil {
		return err
	}
	now := o.now
	if now.IsZero() {
		now = time.Now()
	}
	res := evidence.Verify(bundle, trust, expect, evidence.VerifyOptions{Now: now, ArtifactsDir: o.artifactsDir})
	enc := json.NewEncoder(s.Out)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(res); err != nil {
		return fmt.Errorf("writing the verdict: %w", err)
	}
	if !res.Valid {
		return answer()
	}
	return nil
}

// readCapped reads path ("-" for in) up to max+1 bytes. A regular file is
// read into a buffer of its size: growing one would copy a 100 MB bundle
// several times.
func readCapped(in io.Reader, path string, max int64, flag string) ([]byte, error) {
	if path == "-" {
		if in == nil {
			return nil, rmerr.New(rmerr.Usage, "no standard input").InField(flag)
		}
		b, err := io.ReadAll(io.LimitReader(in, max+1))
		if err != nil {
			return nil, rmerr.Wrap(rmerr.Usage, err, "reading standard input").InField(flag)
		}
		return b, nil
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, rmerr.Wrap(rmerr.Usage, err, "opening %s", path).InField(flag).WithHint("pass a readable file")
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil || !st.Mode().IsRegular() {
		b, err := io.ReadAll(io.LimitReader(f, max+1))
		if err != nil {
			return nil, rmerr.Wrap(rmerr.Usage, err, "reading %s", path).InField(flag)
		}
		return b, nil
	}
	buf := make([]byte, min(st.Size(), max)+1) // one byte more shows a file over the cap, or one that grew
	n, err := io.ReadFull(f, buf)
	if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) {
		return nil, rmerr.Wrap(rmerr.Usage, err, "reading %s", path).InField(flag)
	}
	return buf[:n], nil
}

// keygenOptions are evidence keygen's flags.
type keygenOptions struct {
	keyOut, trustOut string
	validFor         time.Duration
}

func newEvidenceKeygenCmd(runF func(context.Context, IO, *keygenOptions) error) *command {
	if runF == nil {
		runF = runKeygen
	}
	c := &command{
		name:    "evidence keygen",
		usage:   "--key-out F --trust-out F [--valid-for DUR]",
		summary: "write an Ed25519 key pair and a trust document",
		long: `
Writes a new Ed25519 private key (PKCS#8 PEM, mode 0600) to --key-out and a
trust document (runmill.asf-evidence-trust/v1) naming its public key, valid
from now for --valid-for (default 90d, at most 400d), to --trust-out.
Neither file may exist yet. Prints the key id and window as JSON.

Give the key to 'runmill verify --signing-key' (or RUNMILL_SIGNING_KEY) and
the trust document to verifiers. For cosign, extract the public key:
  jq -r '.keys[0].public_key' trust.json > runmill.pub

Exit status: 0 written, 2 usage or the files could not be written.`,
	}
	c.run = func(ctx context.Context, s IO, args []string) error {
		o := &keygenOptions{}
		var validFor string
		fs := newFlags(c, s)
		fs.StringVar(&o.keyOut, "key-out", "", "where to write the private key (PKCS#8 PEM, mode 0600; must not exist)")
		fs.StringVar(&o.trustOut, "trust-out", "", "where to write the trust document (must not exist)")
		fs.StringVar(&validFor, "valid-for", "90d", "validity window: days (90d) or a Go duration (2160h); at most 400d")
		if err := fs.parseStrict(args, "key-out", "trust-out"); err != nil {
			return err
		}
		var err error
		if o.validFor, err = parseValidity(validFor); err != nil {
			return rmerr.Wrap(rmerr.Usage, err, "--valid-for").InField("--valid-for").WithHint("write days (90d) or a Go duration (2160h)")
		}
		if o.keyOut == o.trustOut {
			return rmerr.New(rmerr.Usage, "--key-out and --trust-out name the same file")
		}
		return runF(ctx, s, o)
	}
	return c
}

// runKeygen writes the key pair and prints the key id and window.
func runKeygen(_ context.Context, s IO, o *keygenOptions) error {
	priv, trust, err := evidence.Keygen(o.validFor)
	if err != nil {
		return err
	}
	doc, err := evidence.ParseTrust(trust)
	if err != nil {
		return err
	}
	if err := writeNew(o.keyOut, priv, 0o600); err != nil {
		return err
	}
	if err := writeNew(o.trustOut, trust, 0o644); err != nil {
		os.Remove(o.keyOut) // an orphan key without its trust document helps nobody
		return err
	}
	k := doc.Keys[0]
	out, _ := json.MarshalIndent(map[string]string{"key_id": k.ID, "key": o.keyOut, "trust": o.trustOut,
		"not_before": k.NotBefore, "not_after": k.NotAfter}, "", "  ")
	_, err = fmt.Fprintf(s.Out, "%s\n", out)
	return err
}

// parseValidity reads "90d" or a Go duration.
func parseValidity(s string) (time.Duration, error) {
	if d, ok := strings.CutSuffix(s, "d"); ok {
		n, err := strconv.Atoi(d)
		if err != nil || n <= 0 {
			return 0, fmt.Errorf("%q is not a positive number of days", s)
		}
		return time.Duration(n) * 24 * time.Hour, nil
	}
	return time.ParseDuration(s)
}

// writeNew creates path with mode and content; it never overwrites, so a
// signing key is never replaced by accident.
func writeNew(path string, content []byte, mode os.FileMode) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, mode)
	if err != nil {
		if errors.Is(err, os.ErrExist) {
			return rmerr.New(rmerr.Usage, "%s already exists", path).WithHint("choose a new path; keygen never overwrites a key or trust document")
		}
		return rmerr.Wrap(rmerr.Usage, err, "creating %s", path)
	}
	if _, err := f.Write(content); err != nil {
		f.Close()
		os.Remove(path)
		return rmerr.Wrap(rmerr.Usage, err, "writing %s", path)
	}
	if err := f.Close(); err != nil {
		os.Remove(path)
		return rmerr.Wrap(rmerr.Usage, err, "writing %s", path)
	}
	return nil
}
