package sandbox

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// A GitHub-hosted runner keeps its toolchains in a tool cache
// (RUNNER_TOOL_CACHE, /opt/hostedtoolcache): every actions/setup-go,
// setup-node, setup-python and setup-java install lands there as
// <tool>/<version>/<arch> and is put first on the job's PATH, and the
// image's own default versions are reached through symlinks such as
// /usr/bin/go → /opt/hostedtoolcache/go/<version>/x64/bin/go. None of it is
// under DefaultHostPaths, so a check saw no Go, or a dangling /usr/bin/go.
// RunnerToolPaths finds the installs the job's PATH reaches — and only
// those: not the whole tool cache, whose other versions no check asked for.

// RunnerToolPaths returns the tool-cache install directories
// (<toolCache>/<tool>/<version>/<arch>) that an entry of hostPATH lies in or
// resolves into, or that a symlink in a PATH directory the task sees
// (under hostPaths, DefaultHostPaths when empty) points into; none already
// under hostPaths. An empty toolCache (not a runner) returns nil. Each is a
// directory that exists, named as PATH or the symlink names it (and as it
// resolves, when the tool cache is reached through a symlink), so a bind at
// that path serves the task what the host's PATH finds.
func RunnerToolPaths(hostPATH, toolCache string, hostPaths []string) []string {
	if toolCache == "" || !filepath.IsAbs(toolCache) {
		return nil
	}
	if len(hostPaths) == 0 {
		hostPaths = DefaultHostPaths
	}
	roots := []string{filepath.Clean(toolCache)}
	if real, err := filepath.EvalSymlinks(roots[0]); err != nil {
		return nil
	} else if real != roots[0] {
		roots = append(roots, real)
	}
	var out []string
	add := func(p string) {
		for _, root := range roots {
			rel, ok := under(p, root)
			if !ok || rel == "" {
				continue
			}
			parts := strings.SplitN(rel, "/", 4)
			dir := filepath.Join(append([]string{root}, parts[:min(3, len(parts))]...)...)
			if slices.Contains(out, dir) || visibleUnder(dir, hostPaths) {
				return
			}
			if fi, err := os.Stat(dir); err == nil && fi.IsDir() {
				out = append(out, dir)
			}
			return
		}
	}
	for _, p := range filepath.SplitList(hostPATH) {
		if !filepath.IsAbs(p) {
			continue
		}
		p = filepath.Clean(p)
		add(p)
		if real, err := filepath.EvalSymlinks(p); err == nil {
			add(real)
		}
		if !visibleUnder(p, hostPaths) {
			continue
		}
		ents, _ := os.ReadDir(p)
		for _, e := range ents {
			if e.Type()&os.ModeSymlink == 0 {
				continue
			}
			link := filepath.Join(p, e.Name())
			if target, err := os.Readlink(link); err == nil {
				if !filepath.IsAbs(target) {
					target = filepath.Join(p, target)
				}
				add(filepath.Clean(target))
			}
			if real, err := filepath.EvalSymlinks(link); err == nil {
				add(real)
			}
		}
	}
	return out
}

// WithRunnerTools is hostPaths with RunnerToolPaths added: unchanged (nil
// stays nil, the defaults) when the job's PATH reaches no tool-cache
// install, else the explicit list — the defaults that exist, when hostPaths
// is empty — followed by those installs.
func WithRunnerTools(hostPaths []string, hostPATH, toolCache string) []string {
	tools := RunnerToolPaths(hostPATH, toolCache, hostPaths)
	if len(tools) == 0 {
		return hostPaths
	}
	base := slices.Clone(hostPaths)
	if len(base) == 0 {
		for _, d := range DefaultHostPaths {
			// As validate does for the defaults: a missing one is skipped.
			if _, err := filepath.EvalSymlinks(d); err == nil {
				base = append(base, d)
			}
		}
	}
	return append(base, tools...)
}

// visibleUnder reports whether p is one of roots or lies under one.
func visibleUnder(p string, roots []string) bool {
	for _, r := range roots {
		if _, ok := under(p, filepath.Clean(r)); ok {
			return true
		}
	}
	return false
}
