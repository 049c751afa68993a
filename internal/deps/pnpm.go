package deps

import (
	"bytes"
	"crypto/sha512"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/runmill/verify/internal/bounded"
)

// Pnpm is the strategy of a pnpm install (pnpm-lock.yaml, the isolated
// node_modules/.pnpm layout).
const Pnpm = "pnpm"

const (
	pnpmLockFile = "pnpm-lock.yaml"
	// pnpmStoreIndex is the store's per-package index (pnpm 9, store v3):
	// every file of the package unpacked from the tarball whose integrity
	// names the index, with that file's own sha512.
	pnpmStoreFiles = "v3/files"
	maxStoreIndex  = 16 << 20
)

// pnpmIndex is the part of a store index file runmill checks.
type pnpmIndex struct {
	Name    string                   `json:"name"`
	Version string                   `json:"version"`
	Files   map[string]pnpmIndexFile `json:"files"`
}

type pnpmIndexFile struct {
	Integrity string `json:"integrity"`
	Mode      uint32 `json:"mode"`
	Size      int64  `json:"size"`
}

// checkPnpmInstall checks the install in dir (dir/node_modules, made by
// pnpm from dir/pnpm-lock.yaml) against the lockfile l:
//
//   - node_modules/.pnpm/lock.yaml, pnpm's record of what it installed, is
//     byte-equal to the lockfile (lock);
//   - every lockfile package is installed at its .pnpm directory (a real
//     directory whose package.json has the lockfile's name and version),
//     unless it is optional; no other package is in node_modules/.pnpm;
//   - each direct dependency of the root importer, node_modules/<name>,
//     is a link to the package the lockfile resolved for it;
//   - with store (pnpm's store directory, where the install's files came
//     from): every file of every package is listed in the store's index
//     for the lockfile's integrity, and hashes to that index's sha512, and
//     nothing else is in the package directory — so an edited, added or
//     removed file is refused;
//   - no symlink leaves node_modules (checkLinks).
//
// Every finding is collected and reported at once.
func checkPnpmInstall(dir string, l *pnpmLock, lock []byte, store string) error {
	nm := filepath.Join(dir, nodeModules)
	if st, err := os.Lstat(filepath.Join(nm, ".pnpm")); err != nil || !st.IsDir() {
		return refuse(Pnpm, "%s has no node_modules/.pnpm directory: not a pnpm install with the isolated linker (node-linker=isolated)", dir)
	}
	if err := checkLinks(Pnpm, nm, nm); err != nil {
		return err
	}
	var findings []string
	recorded, err := bounded.ReadFile(filepath.Join(nm, ".pnpm", "lock.yaml"), maxManifest)
	switch {
	case err != nil:
		findings = append(findings, fmt.Sprintf("reading node_modules/.pnpm/lock.yaml: %v", err))
	case !bytes.Equal(recorded, lock):
		findings = append(findings, "node_modules/.pnpm/lock.yaml differs from pnpm-lock.yaml: the install was made from another lockfile")
	}
	dirs := map[string]bool{}
	for _, key := range l.sortedKeys() {
		p := l.Packages[key]
		dirs[pnpmDirName(key)] = true
		at := filepath.Join(nm, filepath.FromSlash(p.Dir()))
		st, err := os.Lstat(at)
		switch {
		case errors.Is(err, fs.ErrNotExist) && p.Optional:
			continue
		case errors.Is(err, fs.ErrNotExist):
			findings = append(findings, fmt.Sprintf("%s is not installed (node_modules/%s is missing)", key, p.Dir()))
			continue
		case err != nil:
			findings = append(findings, fmt.Sprintf("%s: %v", key, err))
			continue
		case !st.IsDir():
			findings = append(findings, fmt.Sprintf("node_modules/%s is not a directory", p.Dir()))
			continue
		}
		if err := checkPnpmManifest(at, p); err != nil {
			findings = append(findings, fmt.Sprintf("%s: %v", key, err))
			continue
		}
		if store != "" {
			if err := checkPnpmFiles(at, store, p); err != nil {
				findings = append(findings, fmt.Sprintf("%s: %v", key, err))
			}
		}
	}
	entries, err := os.ReadDir(filepath.Join(nm, ".pnpm"))
	if err != nil {
		return refuse(Pnpm, "reading node_modules/.pnpm: %v", err)
	}
	for _, e := range entries {
		// lock.yaml is pnpm's record; node_modules holds its hoisted links.
		if n := e.Name(); n != "lock.yaml" && n != nodeModules && !dirs[n] {
			findings = append(findings, fmt.Sprintf("node_modules/.pnpm/%s is not in pnpm-lock.yaml", n))
		}
	}
	for name, v := range l.Importers["."].Dependencies {
		if strings.HasPrefix(v, "link:") {
			findings = append(findings, fmt.Sprintf("%s is a workspace link (%s); pnpm workspaces are not prepared yet", name, v))
			continue
		}
		key := name + "@" + v
		if _, ok := l.Packages[key]; !ok {
			key = v // an alias names its target's key
		}
		p, ok := l.Packages[key]
		if !ok {
			continue // parsePnpmLock refused a dangling reference already
		}
		got, err := os.Readlink(filepath.Join(nm, filepath.FromSlash(name)))
		want := p.Dir()
		if strings.HasPrefix(name, "@") {
			want = "../" + want
		}
		switch {
		case errors.Is(err, fs.ErrNotExist) && p.Optional:
		case err != nil:
			findings = append(findings, fmt.Sprintf("node_modules/%s is not a link to %s: %v", name, want, err))
		case got != want:
			findings = append(findings, fmt.Sprintf("node_modules/%s links to %q, the lockfile resolves it to %s", name, got, want))
		}
	}
	if len(findings) > 0 {
		return refuse(Pnpm, "the install in %s does not match its pnpm-lock.yaml: %s", dir, listFindings(findings))
	}
	return nil
}

// checkPnpmManifest: the installed package.json names the package and
// version the lockfile pins.
func checkPnpmManifest(dir string, p pnpmPackage) error {
	b, err := bounded.ReadFile(filepath.Join(dir, "package.json"), maxManifest)
	if err != nil {
		return fmt.Errorf("reading its package.json: %w", err)
	}
	var m struct{ Name, Version string }
	if err := json.Unmarshal(b, &m); err != nil {
		return fmt.Errorf("its package.json: %w", err)
	}
	if m.Name != p.Name || m.Version != p.Version {
		return fmt.Errorf("its package.json is %s@%s, the lockfile pins %s@%s", m.Name, m.Version, p.Name, p.Version)
	}
	return nil
}

// pnpmIndexPath is where pnpm 9 keeps the index of the package whose
// tarball has the SRI integrity: files/<hex[:2]>/<hex[2:]>-index.json.
func pnpmIndexPath(store, integrity string) (string, error) {
	alg, b64, _ := strings.Cut(integrity, "-")
	if alg != "sha512" {
		return "", fmt.Errorf("integrity %s is not sha512, the store's index names", integrity)
	}
	raw, err := base64.StdEncoding.DecodeString(b64)
	if err != nil || len(raw) != sha512.Size {
		return "", fmt.Errorf("integrity %s is not a sha512 hash", integrity)
	}
	h := hex.EncodeToString(raw)
	return filepath.Join(store, filepath.FromSlash(pnpmStoreFiles), h[:2], h[2:]+"-index.json"), nil
}

// checkPnpmFiles compares the package directory with the store's index of
// the lockfile's tarball: the same files, each with the index's sha512.
// Any file not listed is an addition, except the command shims pnpm writes
// into the package's node_modules/.bin.
func checkPnpmFiles(dir, store string, p pnpmPackage) error {
	ip, err := pnpmIndexPath(store, p.Integrity)
	if err != nil {
		return err
	}
	b, err := bounded.ReadFile(ip, maxStoreIndex)
	if err != nil {
		return fmt.Errorf("the store has no index for its integrity (%v): fetch it with pnpm into that store", err)
	}
	var idx pnpmIndex
	if err := json.Unmarshal(b, &idx); err != nil {
		return fmt.Errorf("the store's index %s: %w", ip, err)
	}
	if idx.Name != p.Name || idx.Version != p.Version {
		return fmt.Errorf("the store's index for its integrity is %s@%s", idx.Name, idx.Version)
	}
	seen := 0
	err = filepath.WalkDir(dir, func(f string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, f)
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			if rel == "node_modules/.bin" {
				// pnpm writes its dependencies' command shims here; they
				// are not in the tarball, and not verified.
				return fs.SkipDir
			}
			return nil
		}
		want, ok := idx.Files[rel]
		if !ok {
			return fmt.Errorf("%s is not in the package's tarball", rel)
		}
		if !d.Type().IsRegular() {
			return fmt.Errorf("%s is not a regular file", rel)
		}
		got, err := sriOfFile(f)
		if err != nil {
			return err
		}
		if got != want.Integrity {
			return fmt.Errorf("%s was edited: it hashes to %s, the tarball's file to %s", rel, got, want.Integrity)
		}
		seen++
		return nil
	})
	if err != nil {
		return err
	}
	if seen != len(idx.Files) {
		return fmt.Errorf("%d of the tarball's %d files are installed", seen, len(idx.Files))
	}
	return nil
}

// sriOfFile is the sha512 SRI hash of a file's bytes.
func sriOfFile(p string) (string, error) {
	f, err := os.Open(p)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha512.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	return "sha512-" + base64.StdEncoding.EncodeToString(h.Sum(nil)), nil
}
