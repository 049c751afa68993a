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
	"bytes"
	"flag"
	"fmt"
	"go/ast"
	"go/format"
	"go/parser"
	"go/token"
	"go/types"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"

	"golang.org/x/tools/go/ast/astutil"
	"golang.org/x/tools/go/packages"
)

const (
	module       = "github.com/runmill/verify"
	verdictPath  = module + "/pkg/verdict"
	evidencePath = module + "/pkg/evidence"
	recordPath   = module + "/pkg/record"
)

// A move is one package-level declaration that leaves its package for
// pkg/record, into file. Methods of a moved type move with it unless they
// are conversions.
type move struct{ from, name, file string }

// moves is the record vocabulary, in the order the record files list it.
var moves = []move{
	{verdictPath, "Finding", "finding.go"},
	{verdictPath, "Normalize", "finding.go"},
	{verdictPath, "compareFindings", "finding.go"},

	{verdictPath, "Phase", "run.go"},
	{verdictPath, "Baseline", "run.go"},
	{verdictPath, "Candidate", "run.go"},
	{verdictPath, "Status", "run.go"},
	{verdictPath, "Passed", "run.go"},
	{verdictPath, "Failed", "run.go"},
	{verdictPath, "Coverage", "run.go"},
	{verdictPath, "Proven", "run.go"},
	{verdictPath, "Unproven", "run.go"},
	{verdictPath, "Orchestrator", "run.go"},
	{evidencePath, "CheckRun", "run.go"},
	{evidencePath, "ReuseRef", "run.go"},
	{evidencePath, "Output", "run.go"},
	{evidencePath, "ReportRecord", "run.go"},
	{verdictPath, "FailedTest", "run.go"},
	{evidencePath, "Inventory", "run.go"},
	{evidencePath, "DependencyUse", "run.go"},

	{verdictPath, "Conclusion", "remote.go"},
	{verdictPath, "Success", "remote.go"},
	{verdictPath, "Neutral", "remote.go"},
	{verdictPath, "Skipped", "remote.go"},
	{verdictPath, "Failure", "remote.go"},
	{verdictPath, "Cancelled", "remote.go"},
	{verdictPath, "TimedOut", "remote.go"},
	{verdictPath, "ActionRequired", "remote.go"},
	{verdictPath, "Stale", "remote.go"},
	{verdictPath, "RemoteResult", "remote.go"},
}

// A conversion is a method of a moved type that needs its original package
// (it returns pkg/verdict's facts, or pkg/report's inventory, which the record
// does not know), so it stays there as a function taking the receiver first:
// r.Facts() becomes evidence.Facts(r).
type conversion struct{ from, recv, method string }

var conversions = []conversion{
	{evidencePath, "CheckRun", "Facts"},
	{evidencePath, "ReportRecord", "ReportInventory"},
	{evidencePath, "Inventory", "reportInventory"},
}

// substitutions replace an unexported helper of the original package that
// moved code calls, so that pkg/record does not grow a copy of it.
var substitutions = map[objKey]substitution{
	{verdictPath, "quote"}: {text: "strconv.Quote", imp: "strconv"},
}

type substitution struct{ text, imp string }

// relocations move a declaration to another file of its own package: the
// helper a moved file leaves behind goes to its one remaining user, so no
// file is left holding nothing else.
var relocations = map[objKey]string{
	{verdictPath, "quote"}: "judge.go",
}

type objKey struct{ pkg, name string }

// recordDoc is pkg/record's package comment, written when the package has
// no doc.go yet.
const recordDoc = `// Package record is the vocabulary of what a verification records: one
// check run as the orchestrator observed it (CheckRun, with its outputs,
// report, prepared dependencies and reuse source), the findings that explain
// a decision (Finding), the phase, status and coverage of a run, and a remote
// context's reconciled conclusion (RemoteResult).
//
// It holds types and nothing that decides: pkg/outcome produces findings,
// pkg/verdict judges runs and takes the verdict over these types, and
// pkg/evidence signs and verifies statements that embed them. Their JSON
// encoding is part of the signed wire format (docs/evidence.md), so a field's
// name or tag never changes here without a new predicate version.
package record
`

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

// collect resolves every reference in every loaded file into edits.
func (r *renamer) collect() error {
	var pkgs []*packages.Package
	packages.Visit(r.pkgsRaw, nil, func(p *packages.Package) {
		if strings.HasPrefix(p.PkgPath, module) && !strings.HasSuffix(p.PkgPath, ".test") {
			pkgs = append(pkgs, p)
		}
	})
	// The test variant of a package holds its internal test files too;
	// visit it first so that every file is resolved once, in the richest
	// package that compiles it.
	sort.SliceStable(pkgs, func(i, j int) bool {
		return strings.Contains(pkgs[i].ID, "[") && !strings.Contains(pkgs[j].ID, "[")
	})
	for _, p := range pkgs {
		if p.TypesInfo == nil {
			continue
		}
		for _, f := range p.Syntax {
			fs, fresh := r.file(p, f)
			if !fresh {
				continue
			}
			fs.info = p.TypesInfo
			r.collectFile(p, f, fs)
		}
	}
	for _, rl := range r.relocated {
		target := r.files[rl.to]
		if target == nil {
			r.errorf("%s: no such file to relocate to", rl.to)
			continue
		}
		rl := rl
		for p := range rl.imports {
			target.addImports = append(target.addImports, p)
		}
		n := len(target.src)
		target.edits = append(target.edits, edit{start: n, end: n, gen: func(dest string) string {
			return "\n" + r.render(rl.from, rl.start, rl.end, dest)
		}})
	}
	if err := r.collectUnloaded(); err != nil {
		return err
	}
	if len(r.errs) > 0 {
		return fmt.Errorf("cannot rename:\n  %s", strings.Join(r.errs, "\n  "))
	}
	return nil
}

// commentRef is a package-qualified name in a comment ("verdict.Finding").
var commentRef = regexp.MustCompile(`\b(verdict|evidence)\.([A-Za-z_][A-Za-z0-9_]*)\b`)

// collectComments rewrites the moved names comments spell out with their
// package, so that the prose points at where the type now lives.
func (r *renamer) collectComments(f *ast.File, fs *fileState) {
	paths := map[string]string{"verdict": verdictPath, "evidence": evidencePath}
	for _, cg := range f.Comments {
		for _, c := range cg.List {
			base := r.off(c.Pos())
			for _, loc := range commentRef.FindAllStringSubmatchIndex(c.Text, -1) {
				name := c.Text[loc[4]:loc[5]]
				m, ok := r.moved[objKey{paths[c.Text[loc[2]:loc[3]]], name}]
				if !ok || !token.IsExported(name) {
					continue
				}
				r.addEdit(fs, base+loc[0], base+loc[1], func(dest string) string {
					if dest == recordPath {
						return m.name
					}
					return "record." + m.name
				})
			}
		}
	}
}

func (r *renamer) collectFile(p *packages.Package, f *ast.File, fs *fileState) {
	info := p.TypesInfo
	r.collectComments(f, fs)
	isOrigin := fs.pkg == verdictPath || fs.pkg == evidencePath
	if isOrigin && !strings.HasSuffix(r.fset.File(f.Pos()).Name(), "_test.go") {
		r.collectDecls(f, fs, info)
	}
	qualified := map[*ast.Ident]bool{}
	ast.Inspect(f, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.CallExpr:
			r.collectCall(n, fs, info)
		case *ast.SelectorExpr:
			x, ok := n.X.(*ast.Ident)
			if !ok {
				return true
			}
			pn, ok := info.Uses[x].(*types.PkgName)
			if !ok {
				return true
			}
			path := pn.Imported().Path()
			if path != verdictPath && path != evidencePath {
				return true
			}
			m, ok := r.moved[objKey{path, n.Sel.Name}]
			if !ok {
				return true
			}
			qualified[n.Sel] = true
			r.refEdit(fs, info, n.Pos(), n.End(), m)
		}
		return true
	})
	// Unqualified references exist only inside the original packages.
	if !isOrigin {
		return
	}
	for id, obj := range info.Uses {
		if qualified[id] || r.fset.File(id.Pos()) != r.fset.File(f.Pos()) {
			continue
		}
		if m, ok := r.isMoved(obj); ok {
			r.refEdit(fs, info, id.Pos(), id.End(), m)
			continue
		}
		if obj.Pkg() == nil || obj.Parent() != obj.Pkg().Scope() || obj.Pkg().Path() != fs.pkg {
			continue
		}
		// A reference to something that stays: fine where it is, not in
		// text that moves to pkg/record.
		key := objKey{obj.Pkg().Path(), obj.Name()}
		text := id.Name
		pos := r.fset.Position(id.Pos())
		r.addEdit(fs, r.off(id.Pos()), r.off(id.End()), func(dest string) string {
			if dest != recordPath {
				return text
			}
			if s, ok := substitutions[key]; ok {
				return s.text
			}
			r.errorf("%s: moved code refers to %s.%s, which stays in its package", pos, key.pkg, key.name)
			return text
		})
	}
}

func (r *renamer) addEdit(fs *fileState, start, end int, gen func(string) string) {
	fs.edits = append(fs.edits, edit{start: start, end: end, gen: gen})
}

// refEdit rewrites one reference to a moved object, spanning [pos, end).
func (r *renamer) refEdit(fs *fileState, info *types.Info, pos, end token.Pos, m move) {
	r.found[objKey{m.from, m.name}] = true
	if fs.pkg != recordPath {
		r.checkShadow(fs, info, pos)
	}
	where := r.fset.Position(pos)
	r.addEdit(fs, r.off(pos), r.off(end), func(dest string) string {
		if dest == recordPath {
			return m.name
		}
		if !token.IsExported(m.name) {
			r.errorf("%s: %s is unexported and used outside the code that moves", where, m.name)
		}
		fs.usesRecord = true
		return fs.recordName + "." + m.name
	})
}

// checkShadow refuses a rewrite where the name "record" means something
// else (a local variable, a parameter).
func (r *renamer) checkShadow(fs *fileState, info *types.Info, pos token.Pos) {
	for scope := range scopesAt(info, pos) {
		_, obj := scope.LookupParent(fs.recordName, pos)
		if obj == nil {
			return
		}
		if pn, ok := obj.(*types.PkgName); ok && pn.Imported().Path() == recordPath {
			return
		}
		r.errorf("%s: %q is not pkg/record here (%s); rename it first", r.fset.Position(pos), fs.recordName, obj)
		return
	}
}

// scopesAt yields the innermost scope containing pos, if go/types recorded
// one.
func scopesAt(info *types.Info, pos token.Pos) func(func(*types.Scope) bool) {
	return func(yield func(*types.Scope) bool) {
		var best *types.Scope
		for _, s := range info.Scopes {
			if s.Pos() <= pos && pos <= s.End() && (best == nil || s.Pos() >= best.Pos() && s.End() <= best.End()) {
				best = s
			}
		}
		if best != nil {
			yield(best)
		}
	}
}

// collectCall turns a call of a converted method into a call of the function
// it becomes.
func (r *renamer) collectCall(call *ast.CallExpr, fs *fileState, info *types.Info) {
	sel, ok := call.Fun.(*ast.SelectorExpr)
	if !ok {
		return
	}
	var c conversion
	var recv types.Type
	if s := info.Selections[sel]; s != nil {
		k, ok := methodOf(s.Obj())
		if !ok {
			return
		}
		if c, ok = r.conv[k]; !ok {
			return
		}
		recv = s.Recv()
	} else if tv, ok := info.Types[sel.X]; ok {
		// After the move the method is gone and the call does not
		// type-check; its receiver still does.
		t := tv.Type
		if p, ok := t.(*types.Pointer); ok {
			t = p.Elem()
		}
		n, ok := t.(*types.Named)
		if !ok || n.Obj().Pkg() == nil {
			return
		}
		var hit bool
		for _, cv := range conversions {
			p := n.Obj().Pkg().Path()
			if cv.recv == n.Obj().Name() && cv.method == sel.Sel.Name && (p == cv.from || p == recordPath) {
				c, hit = cv, true
			}
		}
		if !hit {
			return
		}
		recv = tv.Type
	} else {
		return
	}
	_, isPtr := recv.(*types.Pointer)
	xStart, xEnd := r.off(sel.X.Pos()), r.off(sel.X.End())
	argStart, argEnd := r.off(call.Lparen)+1, r.off(call.Rparen)
	hasArgs := len(call.Args) > 0
	r.addEdit(fs, r.off(call.Pos()), r.off(call.End()), func(dest string) string {
		x := r.render(fs, xStart, xEnd, dest)
		if !isPtr {
			x = "&" + x
		}
		q := ""
		if dest != c.from {
			q = pkgName(c.from) + "."
			if !token.IsExported(c.method) {
				r.errorf("%s: %s is unexported and called outside %s", fs.path, c.method, c.from)
			}
		}
		args := ""
		if hasArgs {
			args = ", " + r.render(fs, argStart, argEnd, dest)
		}
		return q + c.method + "(" + x + args + ")"
	})
}

func pkgName(path string) string { return path[strings.LastIndex(path, "/")+1:] }

// collectDecls finds the declarations that move and the methods that become
// functions.
func (r *renamer) collectDecls(f *ast.File, fs *fileState, info *types.Info) {
	order := map[string]int{}
	for i, m := range moves {
		order[m.from+"."+m.name] = i
	}
	remaining := 0
	for _, d := range f.Decls {
		start, end := r.off(d.Pos()), r.off(d.End())
		switch d := d.(type) {
		case *ast.GenDecl:
			if d.Doc != nil {
				start = r.off(d.Doc.Pos())
			}
			if d.Tok == token.IMPORT {
				continue
			}
			var names, movedNames []string
			for _, s := range d.Specs {
				switch s := s.(type) {
				case *ast.TypeSpec:
					names = append(names, s.Name.Name)
				case *ast.ValueSpec:
					for _, n := range s.Names {
						names = append(names, n.Name)
					}
				}
			}
			for _, n := range names {
				if _, ok := r.moved[objKey{fs.pkg, n}]; ok {
					movedNames = append(movedNames, n)
				}
			}
			if len(movedNames) == 0 {
				remaining++
				continue
			}
			if len(movedNames) != len(names) {
				r.errorf("%s: declaration of %v moves only %v; split it first", r.fset.Position(d.Pos()), names, movedNames)
				continue
			}
			for _, n := range names {
				r.found[objKey{fs.pkg, n}] = true
			}
			m := r.moved[objKey{fs.pkg, names[0]}]
			r.moveDecl(fs, info, start, end, m.file, order[m.from+"."+m.name])
		case *ast.FuncDecl:
			if d.Doc != nil {
				start = r.off(d.Doc.Pos())
			}
			if d.Recv == nil {
				if to, ok := relocations[objKey{fs.pkg, d.Name.Name}]; ok && filepath.Base(fs.path) != to && fileExists(filepath.Join(filepath.Dir(fs.path), to)) {
					r.relocate(fs, start, end, filepath.Join(filepath.Dir(fs.path), to))
					continue
				}
				if m, ok := r.moved[objKey{fs.pkg, d.Name.Name}]; ok {
					r.found[objKey{fs.pkg, d.Name.Name}] = true
					r.moveDecl(fs, info, start, end, m.file, order[m.from+"."+m.name])
					continue
				}
				remaining++
				continue
			}
			recv := recvName(d.Recv.List[0].Type)
			if c, ok := r.conv[objKey{fs.pkg, recv + "." + d.Name.Name}]; ok {
				r.convertDecl(fs, d, c)
				remaining++
				continue
			}
			if m, ok := r.moved[objKey{fs.pkg, recv}]; ok {
				// A method moves with its type, right after it.
				r.moveDecl(fs, info, start, end, m.file, order[m.from+"."+m.name])
				continue
			}
			remaining++
		}
	}
	fs.dropped = remaining == 0 && len(fs.edits) > 0
}

func recvName(t ast.Expr) string {
	if s, ok := t.(*ast.StarExpr); ok {
		t = s.X
	}
	if id, ok := t.(*ast.Ident); ok {
		return id.Name
	}
	return ""
}

// moveDecl records one declaration that moves: rendered for pkg/record, and
// deleted (with its line end) where it is.
func (r *renamer) moveDecl(fs *fileState, info *types.Info, start, end int, file string, order int) {
	if end < len(fs.src) && fs.src[end] == '\n' {
		end++
	}
	md := &movedDecl{file: fs, start: start, end: end, dest: file, order: order, imports: r.importsIn(fs, start, end)}
	r.decls = append(r.decls, md)
	fs.hadMoves = true
	fs.edits = append(fs.edits, edit{start: start, end: end, gen: func(string) string { return "" }, moved: md})
}

// importsIn is the import paths the code in [start, end) of fs refers to.
func (r *renamer) importsIn(fs *fileState, start, end int) map[string]bool {
	out := map[string]bool{}
	for id, obj := range fs.info.Uses {
		pn, ok := obj.(*types.PkgName)
		if !ok || r.off(id.Pos()) < start || r.off(id.End()) > end || r.fset.File(id.Pos()).Name() != fs.path {
			continue
		}
		out[pn.Imported().Path()] = true
	}
	return out
}

// relocate moves [start, end) of fs to the end of the file at to, in the
// same package.
func (r *renamer) relocate(fs *fileState, start, end int, to string) {
	if end < len(fs.src) && fs.src[end] == '\n' {
		end++
	}
	md := &movedDecl{file: fs, start: start, end: end, imports: r.importsIn(fs, start, end)}
	fs.edits = append(fs.edits, edit{start: start, end: end, gen: func(string) string { return "" }, moved: md})
	fs.hadMoves = true
	r.relocated = append(r.relocated, relocation{from: fs, start: start, end: end, to: to, imports: md.imports})
}

type relocation struct {
	from       *fileState
	start, end int
	to         string
	imports    map[string]bool
}

// convertDecl rewrites a method's header into a function's: func (r *T)
// M(a A) becomes func M(r *T, a A).
func (r *renamer) convertDecl(fs *fileState, d *ast.FuncDecl, c conversion) {
	field := d.Recv.List[0]
	if len(field.Names) == 0 {
		r.errorf("%s: method %s has an unnamed receiver", r.fset.Position(d.Pos()), c.method)
		return
	}
	recvStart, recvEnd := r.off(field.Pos()), r.off(field.End())
	pStart, pEnd := r.off(d.Type.Params.Opening)+1, r.off(d.Type.Params.Closing)
	hasParams := len(d.Type.Params.List) > 0
	r.addEdit(fs, r.off(d.Type.Func), pEnd+1, func(dest string) string {
		s := "func " + d.Name.Name + "(" + r.render(fs, recvStart, recvEnd, dest)
		if hasParams {
			s += ", " + r.render(fs, pStart, pEnd, dest)
		}
		return s + ")"
	})
}

// render is src[start:end] with every outermost edit inside applied for
// dest.
func (r *renamer) render(fs *fileState, start, end int, dest string) string {
	var b strings.Builder
	pos := start
	for _, e := range fs.edits {
		if e.start < pos || e.end > end || e.moved != nil && e.start == start && e.end == end {
			continue
		}
		b.Write(fs.src[pos:e.start])
		b.WriteString(e.gen(dest))
		pos = e.end
	}
	b.Write(fs.src[pos:end])
	return b.String()
}

func sortEdits(es []edit) {
	slices.SortStableFunc(es, func(a, b edit) int {
		if a.start != b.start {
			return a.start - b.start
		}
		return b.end - a.end // the enclosing edit first
	})
}

// collectUnloaded rewrites qualified references in .go files no loaded
// package compiles (other GOOS, ignored build tags): by name, as gofmt -r
// would, since there is no type information to do better.
func (r *renamer) collectUnloaded() error {
	return filepath.WalkDir(r.root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if path != r.root && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata" || fileExists(filepath.Join(path, "go.mod"))) {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || r.files[path] != nil {
			return nil
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		f, err := parser.ParseFile(r.fset, path, src, parser.SkipObjectResolution|parser.ParseComments)
		if err != nil {
			return err
		}
		fs := &fileState{path: path, src: src, recordName: "record"}
		r.collectComments(f, fs)
		names := map[string]string{}
		for _, imp := range f.Imports {
			p := strings.Trim(imp.Path.Value, `"`)
			n := pkgName(p)
			if imp.Name != nil {
				n = imp.Name.Name
			}
			names[n] = p
		}
		ast.Inspect(f, func(n ast.Node) bool {
			sel, ok := n.(*ast.SelectorExpr)
			if !ok {
				return true
			}
			x, ok := sel.X.(*ast.Ident)
			if !ok {
				return true
			}
			if m, ok := r.moved[objKey{names[x.Name], sel.Sel.Name}]; ok {
				r.addEdit(fs, r.off(sel.Pos()), r.off(sel.End()), func(string) string {
					fs.usesRecord = true
					return fs.recordName + "." + m.name
				})
			}
			return true
		})
		if len(fs.edits) > 0 {
			r.files[path] = fs
		}
		return nil
	})
}

func fileExists(p string) bool { _, err := os.Stat(p); return err == nil }

// write renders pkg/record's files, then rewrites every edited file.
func (r *renamer) write() error {
	for _, fs := range r.files {
		sortEdits(fs.edits)
	}
	recordDir := filepath.Join(r.root, "pkg", "record")
	byFile := map[string][]*movedDecl{}
	for _, d := range r.decls {
		byFile[d.dest] = append(byFile[d.dest], d)
	}
	type out struct {
		path string
		src  []byte
	}
	var outs []out
	for _, name := range slices.Sorted(maps.Keys(byFile)) {
		ds := byFile[name]
		slices.SortStableFunc(ds, func(a, b *movedDecl) int { return a.order - b.order })
		imports := map[string]bool{}
		var body strings.Builder
		for _, d := range ds {
			for p := range d.imports {
				if p == verdictPath || p == evidencePath {
					continue // a reference to a moved name, rewritten to be local
				}
				imports[p] = true
			}
			text := r.render(d.file, d.start, d.end, recordPath)
			for k, s := range substitutions {
				if k.pkg == d.file.pkg && s.imp != "" && strings.Contains(text, s.text) {
					imports[s.imp] = true
				}
			}
			body.WriteString(strings.TrimRight(text, "\n"))
			body.WriteString("\n\n")
		}
		src, err := recordFile(body.String(), imports)
		if err != nil {
			return fmt.Errorf("pkg/record/%s: %w", name, err)
		}
		outs = append(outs, out{filepath.Join(recordDir, name), src})
	}
	if len(r.errs) > 0 {
		return fmt.Errorf("cannot rename:\n  %s", strings.Join(r.errs, "\n  "))
	}
	for _, path := range slices.Sorted(maps.Keys(r.files)) {
		fs := r.files[path]
		if len(fs.edits) == 0 {
			continue
		}
		if fs.dropped {
			outs = append(outs, out{path, nil})
			continue
		}
		src := []byte(r.render(fs, 0, len(fs.src), fs.pkg))
		src, err := fixImports(path, src, fs)
		if err != nil {
			return err
		}
		if !bytes.Equal(src, fs.src) {
			outs = append(outs, out{path, src})
		}
	}
	if len(r.errs) > 0 {
		return fmt.Errorf("cannot rename:\n  %s", strings.Join(r.errs, "\n  "))
	}
	if len(outs) == 0 {
		fmt.Fprintln(os.Stderr, "record-rename: nothing to rename")
		return nil
	}
	if len(r.decls) > 0 {
		if err := os.MkdirAll(recordDir, 0o755); err != nil {
			return err
		}
		if doc := filepath.Join(recordDir, "doc.go"); !fileExists(doc) {
			outs = append(outs, out{doc, []byte(recordDoc)})
		}
	}
	for _, o := range outs {
		rel, _ := filepath.Rel(r.root, o.path)
		if o.src == nil {
			fmt.Fprintln(os.Stderr, "removed", rel)
			if err := os.Remove(o.path); err != nil {
				return err
			}
			continue
		}
		fmt.Fprintln(os.Stderr, "wrote", rel)
		if err := os.WriteFile(o.path, o.src, 0o644); err != nil {
			return err
		}
	}
	for _, m := range moves {
		if !r.found[objKey{m.from, m.name}] {
			fmt.Fprintf(os.Stderr, "record-rename: note: %s.%s was neither declared nor referenced\n", pkgName(m.from), m.name)
		}
	}
	return nil
}

// recordFile is one pkg/record source file: the package clause, imports
// (standard library first) and the moved declarations, gofmt'ed.
func recordFile(body string, imports map[string]bool) ([]byte, error) {
	var std, mod []string
	for p := range imports {
		if strings.Contains(strings.SplitN(p, "/", 2)[0], ".") {
			mod = append(mod, p)
		} else {
			std = append(std, p)
		}
	}
	slices.Sort(std)
	slices.Sort(mod)
	var b strings.Builder
	b.WriteString("package record\n\n")
	if len(std)+len(mod) > 0 {
		b.WriteString("import (\n")
		for _, p := range std {
			fmt.Fprintf(&b, "\t%q\n", p)
		}
		if len(std) > 0 && len(mod) > 0 {
			b.WriteString("\n")
		}
		for _, p := range mod {
			fmt.Fprintf(&b, "\t%q\n", p)
		}
		b.WriteString(")\n\n")
	}
	b.WriteString(body)
	return format.Source([]byte(b.String()))
}

// fixImports adds pkg/record where the file now uses it and drops the
// imports of pkg/verdict and pkg/evidence it no longer uses.
func fixImports(path string, src []byte, fs *fileState) ([]byte, error) {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, path, src, parser.ParseComments)
	if err != nil {
		return nil, fmt.Errorf("rewritten %s does not parse: %w", path, err)
	}
	if fs.usesRecord {
		if fs.recordName == "record" {
			astutil.AddImport(fset, f, recordPath)
		} else {
			astutil.AddNamedImport(fset, f, fs.recordName, recordPath)
		}
	}
	for _, p := range fs.addImports {
		astutil.AddImport(fset, f, p)
	}
	drop := []string{verdictPath, evidencePath}
	if fs.hadMoves {
		// What the moved declarations needed may be needed no more. These
		// are the original packages' own imports, named by their last
		// path element, which is what UsesImport assumes.
		drop = nil
		for _, imp := range f.Imports {
			drop = append(drop, strings.Trim(imp.Path.Value, `"`))
		}
	}
	for _, p := range drop {
		if !astutil.UsesImport(f, p) {
			astutil.DeleteImport(fset, f, p)
		}
	}
	var b bytes.Buffer
	if err := format.Node(&b, fset, f); err != nil {
		return nil, err
	}
	return regroupImports(path, b.Bytes())
}

// regroupImports splits an import group that AddImport left mixing the
// standard library and modules into the project's two groups, standard
// library first.
func regroupImports(path string, src []byte) ([]byte, error) {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, path, src, parser.ParseComments|parser.ImportsOnly)
	if err != nil {
		return nil, err
	}
	var decl *ast.GenDecl
	for _, d := range f.Decls {
		if g, ok := d.(*ast.GenDecl); ok && g.Tok == token.IMPORT {
			if decl != nil || !g.Lparen.IsValid() {
				return src, nil // several import declarations: leave them
			}
			decl = g
		}
	}
	if decl == nil {
		return src, nil
	}
	isStd := func(s *ast.ImportSpec) bool {
		return !strings.Contains(strings.SplitN(strings.Trim(s.Path.Value, `"`), "/", 2)[0], ".")
	}
	mixed, line := false, 0
	var std, mod []string
	kinds := map[bool]bool{}
	for _, sp := range decl.Specs {
		s := sp.(*ast.ImportSpec)
		if s.Doc != nil || s.Comment != nil {
			return src, nil // a commented import stays where its author put it
		}
		l := fset.Position(s.Pos()).Line
		if line != 0 && l > line+1 {
			kinds = map[bool]bool{} // a blank line starts a new group
		}
		line = l
		kinds[isStd(s)] = true
		mixed = mixed || len(kinds) > 1
		text := s.Path.Value
		if s.Name != nil {
			text = s.Name.Name + " " + text
		}
		if isStd(s) {
			std = append(std, text)
		} else {
			mod = append(mod, text)
		}
	}
	if !mixed {
		return src, nil
	}
	text := "import (\n\t" + strings.Join(std, "\n\t") + "\n\n\t" + strings.Join(mod, "\n\t") + "\n)"
	start, end := fset.Position(decl.Pos()).Offset, fset.Position(decl.End()).Offset
	return format.Source(slices.Concat(src[:start], []byte(text), src[end:]))
}
