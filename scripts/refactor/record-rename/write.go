package main

import (
	"bytes"
	"fmt"
	"go/ast"
	"go/format"
	"go/parser"
	"go/token"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"golang.org/x/tools/go/ast/astutil"
)

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
