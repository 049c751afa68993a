package sandbox_test

import (
	"context"
	"os"
	"strings"
	"testing"

	"github.com/runmill/verify/internal/sandbox"
	"github.com/runmill/verify/internal/sandbox/sandboxtest"
)

// TestImageRootfs: with an image the task's root is the image (read-only),
// not the host toolchain, and the checkout binds and report still work.
func TestImageRootfs(t *testing.T) {
	s := needSandbox(t)
	image := sandboxtest.MinimalImage(t)
	dir := checkout(t)
	report := reportFile(t, dir)
	res := run(t, sandbox.Spec{
		Image:      image,
		Dir:        dir,
		ReadOnly:   []string{dir},
		ReportFile: report,
		Command: `cat /usr/share/runmill-image-marker.txt; cat /etc/os-release 2>/dev/null || echo no-os-release
if (: > /bin/injected) 2>/dev/null; then echo root-writable; fi
if (: > main.go) 2>/dev/null; then echo checkout-writable; fi
printf ok > report.xml; cat main.go`,
	})
	out := string(res.Stdout.Kept)
	for _, want := range []string{"runmill test image", "no-os-release", "package main"} {
		if !strings.Contains(out, want) {
			t.Errorf("missing %q: stdout %q stderr %q", want, out, res.Stderr.Kept)
		}
	}
	for _, bad := range []string{"root-writable", "checkout-writable"} {
		if strings.Contains(out, bad) {
			t.Errorf("%s", bad)
		}
	}
	if b, _ := os.ReadFile(report); string(b) != "ok" {
		t.Errorf("report %q", b)
	}

	// The same tarball again is not imported again; the probe holds in the
	// image too (structurally for the network: there is no perl).
	rep, err := s.Probe(context.Background(), sandbox.Spec{Image: image, ReadOnly: []string{dir}})
	if err != nil {
		for _, c := range rep.Checks {
			t.Logf("%v %s %s", c.OK, c.Name, c.Detail)
		}
		t.Fatal(err)
	}
	for _, c := range rep.Checks {
		if c.Name == "network.tcp4-external" && c.Measured {
			t.Errorf("network measured actively without perl? %+v", c)
		}
	}
}
