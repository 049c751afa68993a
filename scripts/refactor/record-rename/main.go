// Command record-rename moves runmill's record vocabulary into pkg/record
// (issue 18, item 3): the types outcome, verdict and evidence share —
// Finding, Phase, Status, Coverage, RemoteResult, CheckRun and the small
// types a check run embeds — leave pkg/verdict and pkg/evidence, and every
// reference in the module follows them.
//
// It is a tool rather than a hand edit because the rename touches nearly
// every package while other work lands in parallel: run on any later state of
// the tree, it takes the definitions as they are there (a field added on
// main moves with its type), so it never resurrects a stale copy.
//
// Usage, from the module root (it is its own module, so the project's go.mod
// does not gain golang.org/x/tools):
//
//	go -C scripts/refactor/record-rename run . -root "$PWD"
//
// The tree must compile (tests included) before it runs: references are
// resolved with go/types, so a field or a local variable that happens to
// share a moved name is never touched. A second run finds nothing left to
// move and changes nothing.
package main

import (
	"flag"
	"fmt"
	"go/ast"
	"go/token"
	"go/types"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/tools/go/packages"
)

const (
	module       = "github.com/runmill/verify"
	verdictPath  = module + "/pkg/verdict"
	evidencePath = module + "/pkg/evidence"
	recordPath   = module + "/pkg/record"
)

func main() {
	root := flag.String("root", ".", "the runmill module root")
	flag.Parse()
	if err := run(*root); err != nil {
		fmt.Fprintln(os.Stderr, "record-rename:", err)
		os.Exit(1)
	}
}

func run(root string) error {
	root, err := filepath.Abs(root)
	if err != nil {
		return err
	}
	r, err := newRenamer(root)
	if err != nil {
		return err
	}
	if err := r.collect(); err != nil {
		return err
	}
	return r.write()
}

// edit replaces src[start:end] of one file with what gen renders for the
// package the text ends up in (the record package, or where it is).
type edit struct {
	start, end int
	gen        func(dest string) string
	// moved marks the deletion of a moved declaration, which rendering
	// that declaration's own text skips.
	moved *movedDecl
}

type fileState struct {
	path  string
	src   []byte
	pkg   string // import path of the file's package
	edits []edit
	// recordName is the name the file refers to pkg/record by.
	recordName string
	usesRecord bool
	info       *types.Info
	dropped    bool     // every declaration moved away
	hadMoves   bool     // some declaration moved away: its imports may be unused
	addImports []string // what declarations relocated here import
}

// movedDecl is one declaration's text range (doc comment included) in its
// file, and where it goes.
type movedDecl struct {
	file       *fileState
	start, end int
	dest       string // the record file
	order      int
	imports    map[string]bool
}

type renamer struct {
	root      string
	fset      *token.FileSet
	files     map[string]*fileState
	moved     map[objKey]move
	conv      map[objKey]conversion // key: recv type, method as "Recv.method"
	decls     []*movedDecl
	found     map[objKey]bool
	errs      []string
	pkgsRaw   []*packages.Package
	relocated []relocation
}

func newRenamer(root string) (*renamer, error) {
	r := &renamer{root: root, fset: token.NewFileSet(), files: map[string]*fileState{},
		moved: map[objKey]move{}, conv: map[objKey]conversion{}, found: map[objKey]bool{}}
	for _, m := range moves {
		r.moved[objKey{m.from, m.name}] = m
	}
	for _, c := range conversions {
		r.conv[objKey{c.from, c.recv + "." + c.method}] = c
	}
	cfg := &packages.Config{
		Mode: packages.NeedName | packages.NeedFiles | packages.NeedSyntax |
			packages.NeedTypes | packages.NeedTypesInfo | packages.NeedImports,
		Dir:   root,
		Fset:  r.fset,
		Tests: true,
	}
	pkgs, err := packages.Load(cfg, "./...")
	if err != nil {
		return nil, fmt.Errorf("loading packages: %w", err)
	}
	var loadErrs []string
	packages.Visit(pkgs, nil, func(p *packages.Package) {
		for _, e := range p.Errors {
			loadErrs = append(loadErrs, e.Error())
		}
	})
	if len(loadErrs) > 0 {
		// Without complete type information a name could not be told from
		// a field or a local that shares it.
		return nil, fmt.Errorf("the tree must build, tests included, before the rename; %d errors, first: %s", len(loadErrs), loadErrs[0])
	}
	r.pkgsRaw = pkgs
	return r, nil
}

func (r *renamer) errorf(format string, args ...any) {
	r.errs = append(r.errs, fmt.Sprintf(format, args...))
}

// isMoved reports whether obj is a package-level object of the vocabulary.
func (r *renamer) isMoved(obj types.Object) (move, bool) {
	if obj == nil || obj.Pkg() == nil || obj.Parent() != obj.Pkg().Scope() {
		return move{}, false
	}
	m, ok := r.moved[objKey{obj.Pkg().Path(), obj.Name()}]
	return m, ok
}

// methodOf names a method object as "Recv.name" with its receiver's package.
func methodOf(obj types.Object) (objKey, bool) {
	fn, ok := obj.(*types.Func)
	if !ok || fn.Pkg() == nil {
		return objKey{}, false
	}
	sig := fn.Type().(*types.Signature)
	if sig.Recv() == nil {
		return objKey{}, false
	}
	t := sig.Recv().Type()
	if p, ok := t.(*types.Pointer); ok {
		t = p.Elem()
	}
	n, ok := t.(*types.Named)
	if !ok {
		return objKey{}, false
	}
	return objKey{fn.Pkg().Path(), n.Obj().Name() + "." + fn.Name()}, true
}

func (r *renamer) file(p *packages.Package, f *ast.File) (*fileState, bool) {
	name := r.fset.File(f.Pos()).Name()
	if fs, ok := r.files[name]; ok {
		return fs, false
	}
	src, err := os.ReadFile(name)
	if err != nil {
		r.errorf("%v", err)
		return nil, false
	}
	fs := &fileState{path: name, src: src, pkg: strings.TrimSuffix(p.PkgPath, "_test"), recordName: "record"}
	if p.Name != "" && strings.HasSuffix(p.Name, "_test") {
		fs.pkg = p.PkgPath // an external test package is its own package
	}
	for _, imp := range f.Imports {
		if strings.Trim(imp.Path.Value, `"`) == recordPath && imp.Name != nil {
			fs.recordName = imp.Name.Name
		}
	}
	r.files[name] = fs
	return fs, true
}

func (r *renamer) off(p token.Pos) int { return r.fset.Position(p).Offset }
