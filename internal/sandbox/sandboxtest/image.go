// Package sandboxtest builds what sandbox tests in several packages need.
package sandboxtest

import (
	"archive/tar"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"maps"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"testing"
)

// MinimalImage writes an OCI image-layout tarball whose only layer holds the
// host's dash, cat and their loader and libc: enough for sh -c and the
// probe, and nothing else (no perl, no /etc/os-release).
func MinimalImage(t testing.TB) string {
	t.Helper()
	files := map[string]string{ // path in image → host file
		"bin/sh":                             "/bin/dash",
		"bin/cat":                            "/bin/cat",
		"lib/x86_64-linux-gnu/libc.so.6":     "/lib/x86_64-linux-gnu/libc.so.6",
		"lib64/ld-linux-x86-64.so.2":         "/lib64/ld-linux-x86-64.so.2",
		"usr/share/runmill-image-marker.txt": "",
	}
	if runtime.GOARCH != "amd64" {
		t.Skip("the minimal test image is assembled from amd64 host binaries")
	}
	var layer bytes.Buffer
	tw := tar.NewWriter(&layer)
	dirs := map[string]bool{}
	for _, name := range sortedKeys(files) {
		for d := filepath.Dir(name); d != "."; d = filepath.Dir(d) {
			dirs[d] = true
		}
	}
	for _, d := range sortedKeys(dirs) {
		tw.WriteHeader(&tar.Header{Name: d + "/", Mode: 0o755, Typeflag: tar.TypeDir})
	}
	for _, name := range sortedKeys(files) {
		content := []byte("runmill test image\n")
		if src := files[name]; src != "" {
			var err error
			if content, err = os.ReadFile(src); err != nil {
				t.Skipf("host lacks %s for the test image: %v", src, err)
			}
		}
		tw.WriteHeader(&tar.Header{Name: name, Mode: 0o755, Size: int64(len(content)), Typeflag: tar.TypeReg})
		tw.Write(content)
	}
	tw.Close()

	blobs := map[string][]byte{}
	put := func(b []byte) (string, int) {
		d := sha256.Sum256(b)
		h := hex.EncodeToString(d[:])
		blobs[h] = b
		return "sha256:" + h, len(b)
	}
	layerDigest, layerSize := put(layer.Bytes())
	config, _ := json.Marshal(map[string]any{
		"architecture": "amd64", "os": "linux",
		"rootfs": map[string]any{"type": "layers", "diff_ids": []string{layerDigest}},
		"config": map[string]any{},
	})
	configDigest, configSize := put(config)
	manifest, _ := json.Marshal(map[string]any{
		"schemaVersion": 2, "mediaType": "application/vnd.oci.image.manifest.v1+json",
		"config": map[string]any{"mediaType": "application/vnd.oci.image.config.v1+json", "digest": configDigest, "size": configSize},
		"layers": []any{map[string]any{"mediaType": "application/vnd.oci.image.layer.v1.tar", "digest": layerDigest, "size": layerSize}},
	})
	manifestDigest, manifestSize := put(manifest)
	index, _ := json.Marshal(map[string]any{
		"schemaVersion": 2, "mediaType": "application/vnd.oci.image.index.v1+json",
		"manifests": []any{map[string]any{
			"mediaType": "application/vnd.oci.image.manifest.v1+json", "digest": manifestDigest, "size": manifestSize,
			"platform": map[string]any{"architecture": "amd64", "os": "linux"},
		}},
	})

	path := filepath.Join(t.TempDir(), "image.tar")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	out := tar.NewWriter(f)
	add := func(name string, b []byte) {
		out.WriteHeader(&tar.Header{Name: name, Mode: 0o644, Size: int64(len(b)), Typeflag: tar.TypeReg})
		out.Write(b)
	}
	add("oci-layout", []byte(`{"imageLayoutVersion":"1.0.0"}`))
	add("index.json", index)
	for _, h := range sortedKeys(blobs) {
		add("blobs/sha256/"+h, blobs[h])
	}
	if err := out.Close(); err != nil {
		t.Fatal(err)
	}
	return path
}

func sortedKeys[V any](m map[string]V) []string { return slices.Sorted(maps.Keys(m)) }
