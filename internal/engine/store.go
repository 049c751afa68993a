package engine

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
)

// StateDir picks runmill's state directory: the flag, else
// $RUNMILL_STATE_DIR, else /var/lib/runmill for root and
// $XDG_STATE_HOME/runmill (~/.local/state/runmill) otherwise.
//
// A relative directory is made absolute against the working directory: the
// sandbox binds state paths into tasks and containerd resolves them from
// its own directory, so a relative one would name another place.
func StateDir(flag string, getenv func(string) string) string {
	if flag != "" {
		return absolute(flag)
	}
	if d := getenv("RUNMILL_STATE_DIR"); d != "" {
		return absolute(d)
	}
	if os.Geteuid() == 0 {
		return "/var/lib/runmill"
	}
	if d := getenv("XDG_STATE_HOME"); d != "" {
		return filepath.Join(d, "runmill")
	}
	return filepath.Join(getenv("HOME"), ".local", "state", "runmill")
}

func absolute(dir string) string {
	if abs, err := filepath.Abs(dir); err == nil {
		return abs
	}
	return dir
}

// store keeps a run's artifacts content-addressed under dir/sha256/<hex>,
// the layout `runmill evidence verify --artifacts-dir` re-hashes.
type store struct{ dir string }

// put stores b and returns its address "sha256/<hex>".
func (s store) put(b []byte) (string, error) {
	sum := sha256.Sum256(b)
	hexd := hex.EncodeToString(sum[:])
	addr := "sha256/" + hexd
	path := filepath.Join(s.dir, "sha256", hexd)
	if _, err := os.Stat(path); err == nil {
		return addr, nil
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return "", fmt.Errorf("storing artifact: %w", err)
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".tmp-*")
	if err != nil {
		return "", fmt.Errorf("storing artifact: %w", err)
	}
	if _, err := tmp.Write(b); err != nil {
		tmp.Close()
		os.Remove(tmp.Name())
		return "", fmt.Errorf("storing artifact: %w", err)
	}
	if err := tmp.Close(); err != nil {
		os.Remove(tmp.Name())
		return "", fmt.Errorf("storing artifact: %w", err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return "", fmt.Errorf("storing artifact: %w", err)
	}
	return addr, nil
}

// readCapped reads a file of at most max bytes, refusing more.
func readCapped(path string, max int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, max+1))
	if err != nil {
		return nil, err
	}
	if int64(len(b)) > max {
		return nil, fmt.Errorf("larger than %d bytes", max)
	}
	return b, nil
}

// safeJoin joins a validated relative report path to root and refuses any
// existing component that is a symlink or not a directory: the report must
// resolve inside the checkout without following links (spec § 3).
func safeJoin(root, rel string) (string, []string, error) {
	parts := strings.Split(rel, "/")
	cur := root
	var missing []string
	for i, p := range parts {
		cur = filepath.Join(cur, p)
		st, err := os.Lstat(cur)
		if os.IsNotExist(err) {
			if i < len(parts)-1 {
				missing = append(missing, cur)
			}
			continue
		}
		if err != nil {
			return "", nil, err
		}
		if len(missing) > 0 {
			continue
		}
		if st.Mode()&os.ModeSymlink != 0 {
			return "", nil, fmt.Errorf("report path %q passes through the symlink %s", rel, strings.Join(parts[:i+1], "/"))
		}
		if i < len(parts)-1 && !st.IsDir() {
			return "", nil, fmt.Errorf("report path %q: %s is not a directory", rel, strings.Join(parts[:i+1], "/"))
		}
	}
	return cur, missing, nil
}
