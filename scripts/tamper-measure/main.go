// Command tamper-measure runs pkg/outcome's tamper scan over whole real
// test trees, every file as if a change added it, and prints every
// occurrence: the false-alarm measurement of docs/outcome.md § Tamper,
// measured. Each argument is NAME=DIR: a directory (a Go module from `go
// mod download -json`) or a bare git directory (the fetched mirror; its
// HEAD is read with git ls-tree and cat-file, nothing is checked out). The
// trees are read, never copied or kept.
//
//	go run ./scripts/tamper-measure NAME=DIR...
package main

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/runmill/verify/pkg/outcome"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: tamper-measure NAME=DIR...")
		os.Exit(2)
	}
	total, hits := 0, 0
	for _, arg := range os.Args[1:] {
		name, dir, ok := strings.Cut(arg, "=")
		if !ok {
			fmt.Fprintln(os.Stderr, "tamper-measure: want NAME=DIR, got", arg)
			os.Exit(2)
		}
		files, version, err := tree(dir)
		if err != nil {
			fmt.Fprintf(os.Stderr, "tamper-measure: %s: %v\n", name, err)
			os.Exit(1)
		}
		n, py, gotest := 0, 0, 0
		seen := map[string]int{} // files holding each construct the rules weigh
		for p, read := range files {
			if !outcome.IsTamperScanned(p) {
				continue
			}
			if strings.HasSuffix(p, ".py") {
				py++
			} else {
				gotest++
			}
			b, err := read()
			if err != nil {
				fmt.Fprintf(os.Stderr, "tamper-measure: %s: %s: %v\n", name, p, err)
				os.Exit(1)
			}
			for _, c := range constructs {
				if bytes.Contains(b, []byte(c)) {
					seen[c]++
				}
			}
			rep, err := outcome.ScanTamper(bytes.NewReader(b), p, outcome.TamperOptions{ReportPaths: []string{"reports/unit.xml", "reports/unit.json"}})
			if err != nil {
				fmt.Fprintf(os.Stderr, "tamper-measure: %s: %s: %v\n", name, p, err)
				os.Exit(1)
			}
			for _, h := range rep.Tamper {
				n++
				fmt.Printf("HIT\t%s\t%s:%d\t%s\t%s\n", name, h.File, h.Line, h.Rule, h.Code)
			}
		}
		total++
		hits += n
		var held []string
		for _, c := range constructs {
			if seen[c] > 0 {
				held = append(held, fmt.Sprintf("%s×%d", c, seen[c]))
			}
		}
		fmt.Printf("TREE\t%s\t%s\t%d python files\t%d go test files\t%d hits\t%s\n", name, version, py, gotest, n, strings.Join(held, " "))
	}
	fmt.Printf("TOTAL\t%d trees\t%d hits\n", total, hits)
}

// constructs are what the rules weigh; the files holding each are
// counted, to show the rules met them.
var constructs = []string{"func TestMain(", "os.Stdout =", "atexit.register", "os._exit", "pytest_collection_modifyitems", "pytest_runtest_makereport", "pytest_deselected", ".outcome ="}

// tree lists a tree's files with a reader each, and names its version.
func tree(dir string) (map[string]func() ([]byte, error), string, error) {
	if _, err := os.Stat(filepath.Join(dir, "objects")); err == nil {
		return gitTree(dir)
	}
	files := map[string]func() ([]byte, error){}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		files[filepath.ToSlash(rel)] = func() ([]byte, error) { return os.ReadFile(p) }
		return nil
	})
	return files, filepath.Base(dir), err
}

// gitTree reads HEAD of a bare repository: the scanned files' blobs at
// once through one git cat-file --batch.
func gitTree(dir string) (map[string]func() ([]byte, error), string, error) {
	head, err := exec.Command("git", "--git-dir", dir, "rev-parse", "HEAD").Output()
	if err != nil {
		return nil, "", fmt.Errorf("git rev-parse HEAD: %w", err)
	}
	ls, err := exec.Command("git", "--git-dir", dir, "ls-tree", "-r", "-z", "HEAD").Output()
	if err != nil {
		return nil, "", fmt.Errorf("git ls-tree: %w", err)
	}
	var paths, blobs []string
	for _, rec := range bytes.Split(ls, []byte{0}) {
		meta, p, ok := bytes.Cut(rec, []byte{'\t'})
		f := strings.Fields(string(meta))
		if !ok || len(f) != 3 || f[1] != "blob" || f[0] == "120000" || !outcome.IsTamperScanned(string(p)) {
			continue
		}
		paths, blobs = append(paths, string(p)), append(blobs, f[2])
	}
	cmd := exec.Command("git", "--git-dir", dir, "cat-file", "--batch")
	cmd.Stdin = strings.NewReader(strings.Join(blobs, "\n") + "\n")
	out, err := cmd.Output()
	if err != nil {
		return nil, "", fmt.Errorf("git cat-file: %w", err)
	}
	r := bufio.NewReader(bytes.NewReader(out))
	files := map[string]func() ([]byte, error){}
	for _, p := range paths {
		hdr, err := r.ReadString('\n')
		if err != nil {
			return nil, "", err
		}
		f := strings.Fields(hdr)
		if len(f) != 3 {
			return nil, "", fmt.Errorf("cat-file: %q", hdr)
		}
		size, _ := strconv.Atoi(f[2])
		b := make([]byte, size+1)
		if _, err := io.ReadFull(r, b); err != nil {
			return nil, "", err
		}
		content := b[:size]
		files[p] = func() ([]byte, error) { return content, nil }
	}
	return files, strings.TrimSpace(string(head)), nil
}
