package deps

import (
	"context"
	"crypto/sha512"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/runmill/verify/internal/git"
	"github.com/runmill/verify/pkg/digest"
	"github.com/runmill/verify/pkg/objectid"
)

// Plug'n'Play: Berry with `nodeLinker: pnp` installs no node_modules but a
// zip per package in the project cache (.yarn/cache) and .pnp.cjs, the
// resolver node loads (`node -r ./.pnp.cjs`) that maps every package to
// its place inside a zip. .pnp.cjs is code the check runs, so the one the
// check sees is the one the operator's yarn generated outside
// verification for that commit's yarn.lock — never the repository's (a
// commit that tracks .pnp.cjs, .pnp.loader.mjs or .yarn/cache is refused:
// zero-installs are not offered). What runmill verifies of it: its
// resolution map (the JSON state Berry embeds) names exactly the
// lockfile's packages, each at a zip whose SHA-512 is the lockfile's
// checksum and the workspace at the project root; the code around the
// map is Berry's runtime, which no input of the commit's can change (the
// manifests reach it only as JSON inside the map), and its digest is a key
// input (pnp_runtime), so evidence names the runtime that ran.

const (
	pnpFile    = ".pnp.cjs"
	pnpLoader  = ".pnp.loader.mjs"
	yarnCache  = ".yarn/cache"
	maxPnPFile = 64 << 20
	// The JavaScript string Berry writes the state into.
	pnpStateStart = "const RAW_RUNTIME_STATE =\n'"
	pnpStateEnd   = "';\n"
)

// pnpTracked are the paths a PnP commit must neither track nor leave
// unignored: the view puts the prepared ones there.
var pnpTracked = []string{pnpFile, pnpLoader, yarnCache}

// isPnP reports whether from holds a Plug'n'Play install.
func isPnP(from string) bool {
	st, err := os.Lstat(filepath.Join(from, pnpFile))
	return err == nil && st.Mode().IsRegular()
}

// importPnP copies from's .pnp.cjs, .pnp.loader.mjs (when Berry wrote
// one) and project cache into dst; the caller verifies the copy, which
// only runmill writes, with checkPnP.
func importPnP(ctx context.Context, from, dst string, file func(src, dst string, mode fs.FileMode) error) error {
	if _, err := os.Lstat(filepath.Join(from, ".yarn", "unplugged")); err == nil {
		return refuse(Yarn, "%s has .yarn/unplugged (packages with build scripts or unpacked files); Plug'n'Play installs with unplugged packages are not supported yet", from)
	}
	cache := filepath.Join(from, filepath.FromSlash(yarnCache))
	if st, err := os.Lstat(cache); err != nil || !st.IsDir() {
		return refuse(Yarn, "no project cache %s (set enableGlobalCache: false in the operator's .yarnrc.yml, so the zips are beside .pnp.cjs): %v", cache, err)
	}
	if err := os.MkdirAll(filepath.Join(dst, ".yarn"), 0o755); err != nil {
		return err
	}
	if err := importTree(ctx, Yarn, cache, cache, filepath.Join(dst, filepath.FromSlash(yarnCache)), file); err != nil {
		return err
	}
	for _, f := range []string{pnpFile, pnpLoader} {
		st, err := os.Lstat(filepath.Join(from, f))
		if errors.Is(err, fs.ErrNotExist) && f == pnpLoader {
			continue
		}
		if err != nil || !st.Mode().IsRegular() {
			return refuse(Yarn, "%s in %s is not a regular file: %v", f, from, err)
		}
		if err := readableByAll(filepath.Join(from, f), st); err != nil {
			return refuse(Yarn, "%v", err)
		}
		if err := file(filepath.Join(from, f), filepath.Join(dst, f), st.Mode()); err != nil {
			return err
		}
	}
	return nil
}

// checkPnP verifies a PnP tree (dir/.pnp.cjs, dir/.yarn/cache) against
// the lockfile and returns the digest of .pnp.cjs's runtime (the file
// without its state).
func checkPnP(dir string, l *yarnLock) (string, error) {
	zips, err := cacheZips(filepath.Join(dir, filepath.FromSlash(yarnCache)))
	if err != nil {
		return "", err
	}
	b, err := readFileCapped(filepath.Join(dir, pnpFile))
	if err != nil {
		return "", refuse(Yarn, "reading %s: %v", pnpFile, err)
	}
	state, runtime, err := pnpState(b)
	if err != nil {
		return "", refuse(Yarn, "%s: %v", pnpFile, err)
	}
	var findings []string
	used := map[string]bool{}
	hard := map[string]yarnPackage{} // by locator "name@reference"
	for _, p := range l.Packages {
		if p.LinkType == "hard" {
			hard[p.Resolution] = p
		}
	}
	seen := map[string]bool{}
	for _, e := range state {
		loc := e.name + "@" + e.reference
		switch {
		case e.name == "" && e.location == "./":
			continue // the top-level workspace's own entry
		case e.linkType == "SOFT":
			if e.location != "./" || !strings.HasPrefix(e.reference, "workspace:") {
				findings = append(findings, fmt.Sprintf("%s is a link to %s (only the project's own workspace is supported)", loc, e.location))
			}
			continue
		}
		p, ok := hard[loc]
		if !ok {
			findings = append(findings, loc+" is in "+pnpFile+" but not in yarn.lock")
			continue
		}
		seen[loc] = true
		zip, rest, _ := strings.Cut(strings.TrimPrefix(e.location, "./"+yarnCache+"/"), "/")
		want := berryHash(p.Checksum)
		switch {
		case !strings.HasPrefix(e.location, "./"+yarnCache+"/") || rest != "node_modules/"+e.name+"/":
			findings = append(findings, fmt.Sprintf("%s is at %s, not inside its zip in %s", loc, e.location, yarnCache))
		case zips[zip] == "":
			findings = append(findings, fmt.Sprintf("%s is in %s, which is not in the cache", loc, zip))
		case zips[zip] != want:
			findings = append(findings, fmt.Sprintf("%s's zip %s has SHA-512 %s, yarn.lock's checksum is %s", loc, zip, zips[zip], p.Checksum))
		default:
			used[zip] = true
		}
	}
	for _, loc := range slices.Sorted(maps.Keys(hard)) {
		if !seen[loc] {
			findings = append(findings, loc+" is in yarn.lock but not in "+pnpFile)
		}
	}
	for _, z := range slices.Sorted(maps.Keys(zips)) {
		if !used[z] {
			findings = append(findings, fmt.Sprintf("%s/%s is in the cache but no package of yarn.lock is in it", yarnCache, z))
		}
	}
	if len(findings) > 0 {
		return "", refuse(Yarn, "the Plug'n'Play install does not match yarn.lock: %s", listFindings(findings))
	}
	return digest.Of(runtime), nil
}

// cacheZips is each zip of a project cache by name, with its SHA-512 hex;
// anything but zips (and Berry's .gitignore) is refused.
func cacheZips(dir string) (map[string]string, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, refuse(Yarn, "reading %s: %v", dir, err)
	}
	out := map[string]string{}
	for _, e := range ents {
		n := e.Name()
		if n == ".gitignore" && e.Type().IsRegular() {
			continue
		}
		if !strings.HasSuffix(n, ".zip") || !e.Type().IsRegular() {
			return nil, refuse(Yarn, "%s/%s is not a package zip; the project cache holds only zips", dir, n)
		}
		f, err := os.Open(filepath.Join(dir, n))
		if err != nil {
			return nil, refuse(Yarn, "%v", err)
		}
		h := sha512.New()
		_, err = io.Copy(h, f)
		f.Close()
		if err != nil {
			return nil, refuse(Yarn, "reading %s: %v", n, err)
		}
		out[n] = hex.EncodeToString(h.Sum(nil))
	}
	return out, nil
}

// pnpEntry is one package of .pnp.cjs's packageRegistryData.
type pnpEntry struct {
	name, reference, location, linkType string
}

// pnpState takes the resolution map out of .pnp.cjs: the JSON Berry
// writes as one single-quoted JavaScript string (line continuations, and
// only \\ and \' escaped). It returns the map's packages and the file
// with the string removed (the runtime).
func pnpState(b []byte) ([]pnpEntry, []byte, error) {
	s := string(b)
	i := strings.Index(s, pnpStateStart)
	if i < 0 || strings.Count(s, pnpStateStart) != 1 {
		return nil, nil, errors.New("no RAW_RUNTIME_STATE string (not a .pnp.cjs Berry 4 wrote)")
	}
	body := s[i+len(pnpStateStart):]
	var js strings.Builder
	end := -1
	for k := 0; k < len(body); k++ {
		c := body[k]
		if c == '\'' {
			end = k
			break
		}
		if c == '\n' {
			return nil, nil, errors.New("RAW_RUNTIME_STATE has a line break without its continuation")
		}
		if c != '\\' {
			js.WriteByte(c)
			continue
		}
		k++
		if k == len(body) {
			break
		}
		switch body[k] {
		case '\n':
		case '\\', '\'', '"':
			js.WriteByte(body[k])
		default:
			return nil, nil, fmt.Errorf("RAW_RUNTIME_STATE has the escape \\%c, which Berry does not write", body[k])
		}
	}
	if end < 0 || !strings.HasPrefix(body[end:], pnpStateEnd) {
		return nil, nil, errors.New("RAW_RUNTIME_STATE is not closed")
	}
	var st struct {
		PackageRegistryData [][2]json.RawMessage `json:"packageRegistryData"`
	}
	if err := json.Unmarshal([]byte(js.String()), &st); err != nil {
		return nil, nil, fmt.Errorf("RAW_RUNTIME_STATE: %v", err)
	}
	var out []pnpEntry
	for _, pkg := range st.PackageRegistryData {
		var name *string
		var refs [][2]json.RawMessage
		if err := json.Unmarshal(pkg[0], &name); err != nil {
			return nil, nil, fmt.Errorf("packageRegistryData: %v", err)
		}
		if err := json.Unmarshal(pkg[1], &refs); err != nil {
			return nil, nil, fmt.Errorf("packageRegistryData: %v", err)
		}
		for _, r := range refs {
			var ref *string
			var info struct {
				PackageLocation string `json:"packageLocation"`
				LinkType        string `json:"linkType"`
			}
			if err := json.Unmarshal(r[0], &ref); err != nil {
				return nil, nil, fmt.Errorf("packageRegistryData: %v", err)
			}
			if err := json.Unmarshal(r[1], &info); err != nil {
				return nil, nil, fmt.Errorf("packageRegistryData: %v", err)
			}
			e := pnpEntry{location: info.PackageLocation, linkType: info.LinkType}
			if name != nil {
				e.name = *name
			}
			if ref != nil {
				e.reference = *ref
			}
			out = append(out, e)
		}
	}
	runtime := s[:i] + s[i+len(pnpStateStart)+end+len(pnpStateEnd):]
	return out, []byte(runtime), nil
}

// pnpView gives a checkout the PnP install: .pnp.cjs (and its loader)
// copied read-only to the checkout's root, where it must sit (it resolves
// the project's own files relative to itself), and the verified zips bound
// read-only at <checkout>/.yarn/cache. The commit must track none of them
// and ignore all of them, so the prepared files never enter the measured
// tree.
func pnpView(ctx context.Context, r *git.Repo, commit, dir string, side *yarnSide) (*View, error) {
	for _, p := range pnpTracked {
		e, err := r.Stat(ctx, commit, p)
		if err != nil {
			return nil, err
		}
		if e.Kind != git.Missing {
			return nil, refuse(Yarn, "%s tracks %s (zero-installs); Plug'n'Play's files are prepared outside verification: remove it from the repository and ignore it", objectid.Short(commit), p)
		}
		probe := p
		if p == yarnCache {
			probe += "/"
		}
		ignored, err := r.Ignored(ctx, probe)
		if err != nil {
			return nil, err
		}
		if !ignored {
			return nil, refuse(Yarn, "%s is not ignored; add it to .gitignore so the prepared Plug'n'Play files cannot enter the measured tree", p)
		}
	}
	for _, f := range []string{pnpFile, pnpLoader} {
		b, err := os.ReadFile(filepath.Join(side.tree, f))
		if errors.Is(err, fs.ErrNotExist) && f == pnpLoader {
			continue
		}
		if err != nil {
			return nil, err
		}
		if err := os.WriteFile(filepath.Join(dir, f), b, 0o444); err != nil {
			return nil, fmt.Errorf("placing %s in %s: %w", f, dir, err)
		}
	}
	// The mount point's directories are runmill's, left out of the tree
	// hash: .yarn itself when the commit has none (an empty directory
	// would change the measured tree).
	exclude := []string{pnpFile, pnpLoader, yarnCache}
	if _, err := os.Lstat(filepath.Join(dir, ".yarn")); errors.Is(err, fs.ErrNotExist) {
		exclude = append(exclude, ".yarn")
	}
	mnt := filepath.Join(dir, filepath.FromSlash(yarnCache))
	if err := os.MkdirAll(mnt, 0o755); err != nil {
		return nil, err
	}
	return &View{Mounts: []Mount{{Source: filepath.Join(side.tree, filepath.FromSlash(yarnCache)), Destination: mnt}},
		Exclude: exclude, Notes: []string{side.receipt.Note()}, Use: side.receipt.use(side.commit)}, nil
}
