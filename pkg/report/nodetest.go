package report

import (
	"path"
	"slices"
	"strings"
)

// node:test's conventions, which its JUnit and TAP reporters share and
// which change what an id means (docs/reports.md § node:test; real reports
// of Node 20.20, 22.23 and 24.11 in testdata/recorded):
//
//   - The JUnit reporter writes classname="test", a placeholder, on every
//     testcase. Node 24.11 and later add file= with the absolute path of the
//     file that defined the test; the file then replaces the placeholder,
//     relative to Options.Root: <testcase classname="test" name="rounds"
//     file="/runmill/checkout/test/a.test.js"/> is test/a.test.js::rounds, so
//     the same name in two files is two tests (also under suite-path). That
//     is the id a reporter gets that puts the relative file in the classname
//     itself (the recipe for older Node in docs/reports.md), so a project
//     that upgrades Node keeps its ids. Only that placeholder is replaced:
//     pytest's file= beside its own classname changes nothing. No Node
//     writes a passing test's file in TAP.
//   - node --test runs every file its patterns match (any .js, .cjs or .mjs
//     under a test/ directory, *.test.js, test-*.js …), and a file that
//     defines no test shows as one passing top-level test named by its path
//     (absolute on Node 20, relative to the working directory on 22 and
//     later): a helper the runner loaded. Such an entry is recorded as a
//     file (Inventory.Files, relative to Options.Root), not a test: renaming
//     or removing a helper is no deletion of a test, and a report of nothing
//     but loaded files ran no test (RM-REPORT-005). The entry must look
//     exactly as node writes it — JUnit: a top-level testcase named by a
//     path nodeLoadedPath accepts, classname "test" (or that path relative
//     to Options.Root), file= absent or that same file, no result element;
//     TAP: a top-level "ok" point without directive or subtests, named by
//     such a path, right after node's "# Subtest: <path>" header (node
//     numbers it by the file's place among the files: the number is not
//     held to the sequence). A failing one (the file threw while loading)
//     stays a failed test; eslint's TAP, which names files by path without
//     Subtest headers, keeps its points.

// nodePlaceholderClass is the classname node:test's JUnit reporter writes
// when a test has none of its own.
const nodePlaceholderClass = "test"

// nodeFileExts are the extensions node --test runs (TypeScript since type
// stripping).
var nodeFileExts = []string{".js", ".cjs", ".mjs", ".ts", ".cts", ".mts"}

// nodeLoadedPath reports whether name reads as node's name for a file it
// ran: a clean path, absolute (node 20) or relative to its working
// directory (node 22 and later), with an extension node runs, that node's
// default discovery picks (a stem "test", "test-…", "….test", "…-test" or
// "…_test", or a test/ directory on the way). The last condition keeps a
// real test named after some other file — test(file, …) per example file —
// a test.
func nodeLoadedPath(name string) bool {
	if name == "" || path.Clean(name) != name || name == "/" || strings.HasPrefix(name, "../") {
		return false
	}
	ext := path.Ext(name)
	if !slices.Contains(nodeFileExts, ext) {
		return false
	}
	dir, base := path.Split(name)
	stem := strings.TrimSuffix(base, ext)
	switch {
	case stem == "test", strings.HasPrefix(stem, "test-"), strings.HasSuffix(stem, ".test"),
		strings.HasSuffix(stem, "-test"), strings.HasSuffix(stem, "_test"):
		return true
	}
	return slices.Contains(strings.Split(strings.Trim(dir, "/"), "/"), "test")
}

// underRoot returns p relative to root when p lies strictly below it, and
// p unchanged otherwise (root "" relativises nothing).
func underRoot(root, p string) string {
	if root == "" || root == "/" {
		return p
	}
	if rel, ok := strings.CutPrefix(p, strings.TrimSuffix(root, "/")+"/"); ok && rel != "" && path.Clean(rel) == rel && !strings.HasPrefix(rel, "../") && rel != ".." {
		return rel
	}
	return p
}

// finishFiles sorts and bounds the loaded files of an inventory, with a
// note naming how many there were.
func finishFiles(inv *Inventory, files []string) {
	if len(files) == 0 {
		return
	}
	slices.Sort(files)
	files = slices.Compact(files)
	inv.FileCount = len(files)
	if len(files) > MaxFilesListed {
		files = files[:MaxFilesListed]
	}
	inv.Files = slices.Clip(files)
}
