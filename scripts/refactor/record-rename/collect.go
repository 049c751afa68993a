package main

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"go/types"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"

	"golang.org/x/tools/go/packages"
)

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
	scope := innermost(info, pos)
	if scope == nil {
		return
	}
	_, obj := scope.LookupParent(fs.recordName, pos)
	if obj == nil {
		return
	}
	if pn, ok := obj.(*types.PkgName); ok && pn.Imported().Path() == recordPath {
		return
	}
	r.errorf("%s: %q is not pkg/record here (%s); rename it first", r.fset.Position(pos), fs.recordName, obj)
}

// innermost is the smallest scope go/types recorded around pos.
func innermost(info *types.Info, pos token.Pos) *types.Scope {
	var best *types.Scope
	for _, s := range info.Scopes {
		if s.Pos() <= pos && pos <= s.End() && (best == nil || s.Pos() >= best.Pos() && s.End() <= best.End()) {
			best = s
		}
	}
	return best
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
			r.moveDecl(fs, start, end, m.file, order[m.from+"."+m.name])
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
					r.moveDecl(fs, start, end, m.file, order[m.from+"."+m.name])
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
				r.moveDecl(fs, start, end, m.file, order[m.from+"."+m.name])
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
func (r *renamer) moveDecl(fs *fileState, start, end int, file string, order int) {
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
