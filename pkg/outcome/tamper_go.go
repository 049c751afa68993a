package outcome

import (
	"go/ast"
	"go/parser"
	"go/token"
	"strconv"
	"strings"

	"github.com/runmill/verify/pkg/record"
)

// scanGo applies the Go rules to one _test.go file. A file that does not
// parse returns the error and what the part that parsed shows.
func scanGo(src []byte, file string, reportPaths []string) ([]record.Tamper, error) {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, file, src, parser.SkipObjectResolution)
	if f == nil {
		return []record.Tamper{}, err
	}
	g := &goScan{fset: fset, src: src, file: file, hits: []record.Tamper{}, funcs: map[string]*ast.FuncDecl{}}
	g.imports(f)
	for _, d := range f.Decls {
		if fd, ok := d.(*ast.FuncDecl); ok && fd.Recv == nil && fd.Body != nil {
			g.funcs[fd.Name.Name] = fd
		}
	}
	for _, d := range f.Decls {
		switch d := d.(type) {
		case *ast.FuncDecl:
			if d.Recv != nil || d.Body == nil {
				continue
			}
			switch {
			case d.Name.Name == "TestMain" && isTestingM(d, g.testingName):
				g.output(d.Body)
				g.exits(d, mParam(d))
			case d.Name.Name == "init":
				g.output(d.Body)
			default:
				// A helper given the *testing.M (os.Exit(run(m))) exits and
				// returns under the same rule.
				if m := testingMParam(d, g.testingName); m != "" {
					g.exits(d, m)
					g.returns(d, m)
				}
			}
		case *ast.GenDecl:
			if d.Tok == token.VAR {
				g.output(d)
			}
		}
	}
	// The spelled results count only in a file that runs code around the
	// tests (a TestMain or an init): a test of a test-output parser
	// spells them too.
	around := false
	for _, d := range f.Decls {
		if fd, ok := d.(*ast.FuncDecl); ok && fd.Recv == nil && (fd.Name.Name == "init" || fd.Name.Name == "TestMain" && isTestingM(fd, g.testingName)) {
			around = true
		}
	}
	ast.Inspect(f, func(n ast.Node) bool {
		if lit, ok := n.(*ast.BasicLit); ok && lit.Kind == token.STRING {
			if s, err := strconv.Unquote(lit.Value); err == nil {
				if p := namesReportPath(s, reportPaths); p != "" {
					g.hit(TamperReportPath, lit, p)
				}
				if around && (strings.Contains(s, "--- PASS") || strings.Contains(s, "--- FAIL")) {
					// What go test prints for a test's end: a test file
					// that spells it can rewrite or forge it.
					g.hit(TamperGoOutput, lit, "")
				}
			}
		}
		return true
	})
	return g.hits, err
}

type goScan struct {
	fset  *token.FileSet
	src   []byte
	file  string
	hits  []record.Tamper
	funcs map[string]*ast.FuncDecl
	// checks counts the exits and returns weighed (maxTamperChecks).
	checks int
	// vars memoizes runVar: each variable is weighed once.
	vars map[varKey]bool
	// The names the file imports these packages under ("" when it does
	// not).
	osName, syscallName, unixName, testingName string
}

func (g *goScan) imports(f *ast.File) {
	for _, im := range f.Imports {
		p, err := strconv.Unquote(im.Path.Value)
		if err != nil {
			continue
		}
		name := ""
		switch p {
		case "os", "syscall", "golang.org/x/sys/unix", "testing":
			name = map[string]string{"os": "os", "syscall": "syscall", "golang.org/x/sys/unix": "unix", "testing": "testing"}[p]
		default:
			continue
		}
		if im.Name != nil {
			name = im.Name.Name
		}
		switch p {
		case "os":
			g.osName = name
		case "syscall":
			g.syscallName = name
		case "golang.org/x/sys/unix":
			g.unixName = name
		case "testing":
			g.testingName = name
		}
	}
}

func (g *goScan) hit(rule string, n ast.Node, reportPath string) {
	if len(g.hits) >= maxTamperHits {
		return
	}
	pos := g.fset.Position(n.Pos())
	start, end := g.fset.Position(n.Pos()).Offset, g.fset.Position(n.End()).Offset
	code := ""
	if start >= 0 && end <= len(g.src) && start <= end {
		code = tamperCode(g.src[start:end])
	}
	g.hits = append(g.hits, record.Tamper{File: g.file, Line: pos.Line, Rule: rule, Code: code, ReportPath: reportPath})
}

// isTestingM: TestMain(m *testing.M), the signature go test calls.
func isTestingM(d *ast.FuncDecl, testing string) bool {
	ps := d.Type.Params.List
	if testing == "" || len(ps) != 1 || len(ps[0].Names) > 1 {
		return false
	}
	star, ok := ps[0].Type.(*ast.StarExpr)
	return ok && isSel(star.X, testing, "M")
}

// mParam is the name TestMain's *testing.M goes by ("" when unnamed).
func mParam(d *ast.FuncDecl) string {
	if ps := d.Type.Params.List; len(ps) == 1 && len(ps[0].Names) == 1 {
		return ps[0].Names[0].Name
	}
	return ""
}

// isSel: e is pkg.name, pkg a package name the file imports.
func isSel(e ast.Expr, pkg, name string) bool {
	s, ok := e.(*ast.SelectorExpr)
	if !ok || pkg == "" {
		return false
	}
	x, ok := s.X.(*ast.Ident)
	return ok && x.Name == pkg && s.Sel.Name == name
}

// output finds the constructs that replace the test binary's output.
func (g *goScan) output(n ast.Node) {
	ast.Inspect(n, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.AssignStmt:
			for _, lhs := range n.Lhs {
				if star, ok := lhs.(*ast.StarExpr); ok {
					lhs = star.X
				}
				if isSel(lhs, g.osName, "Stdout") || isSel(lhs, g.osName, "Stderr") {
					g.hit(TamperGoOutput, n, "")
				}
			}
		case *ast.CallExpr:
			switch {
			case isSel(n.Fun, g.osName, "NewFile"),
				isSel(n.Fun, g.syscallName, "Dup2"), isSel(n.Fun, g.syscallName, "Dup3"),
				isSel(n.Fun, g.unixName, "Dup2"), isSel(n.Fun, g.unixName, "Dup3"):
				g.hit(TamperGoOutput, n, "")
			}
		}
		return true
	})
}

// testingMParam is the name of d's *testing.M parameter, "" when it has
// none.
func testingMParam(d *ast.FuncDecl, testing string) string {
	for _, f := range d.Type.Params.List {
		if star, ok := f.Type.(*ast.StarExpr); ok && isSel(star.X, testing, "M") && len(f.Names) == 1 {
			return f.Names[0].Name
		}
	}
	return ""
}

// exits finds the exits of TestMain (m is its *testing.M) with a code
// that is not m.Run()'s. An exit before the first m.Run() in the
// function's own statements (not in a closure) ends a process that ran no
// test — a TestMain that re-executes the test binary as a tool exits 0
// there — and is not one.
func (g *goScan) exits(d *ast.FuncDecl, m string) {
	first := token.NoPos
	ast.Inspect(d.Body, func(n ast.Node) bool {
		if call, ok := n.(*ast.CallExpr); ok && first == token.NoPos && (isSel(call.Fun, m, "Run") || passesM(call, m)) {
			first = call.Pos()
		}
		return first == token.NoPos
	})
	var inspect func(n ast.Node, inLit bool)
	inspect = func(root ast.Node, inLit bool) {
		ast.Inspect(root, func(n ast.Node) bool {
			if lit, ok := n.(*ast.FuncLit); ok && lit != root {
				inspect(lit, true)
				return false
			}
			if d, ok := n.(*ast.DeferStmt); ok && !inLit {
				inspect(d.Call, true) // runs at the end, after m.Run()
				return false
			}
			call, ok := n.(*ast.CallExpr)
			if !ok || !(isSel(call.Fun, g.osName, "Exit") || isSel(call.Fun, g.syscallName, "Exit") || isSel(call.Fun, g.unixName, "Exit")) {
				return true
			}
			if !inLit && (first == token.NoPos || call.Pos() < first) {
				return true
			}
			g.checks++
			if len(call.Args) != 1 || g.checks > maxTamperChecks || !g.runCode(call.Args[0], d, m, 0) {
				g.hit(TamperGoExit, call, "")
			}
			return true
		})
	}
	inspect(d.Body, false)
}

// returns finds the returns of a helper given the *testing.M (m) whose
// value is not m.Run()'s result; a helper returning nothing is no exit
// code.
func (g *goScan) returns(d *ast.FuncDecl, m string) {
	res := d.Type.Results
	if res == nil || len(res.List) != 1 || len(res.List[0].Names) > 1 {
		return
	}
	named := ""
	if len(res.List[0].Names) == 1 {
		named = res.List[0].Names[0].Name
	}
	ast.Inspect(d.Body, func(n ast.Node) bool {
		if _, lit := n.(*ast.FuncLit); lit {
			return false
		}
		r, ok := n.(*ast.ReturnStmt)
		if !ok {
			return true
		}
		g.checks++
		switch {
		case g.checks > maxTamperChecks:
			g.hit(TamperGoExit, r, "")
		case len(r.Results) == 1 && g.runCode(r.Results[0], d, m, 0):
		case len(r.Results) == 0 && named != "" && g.runVar(named, d, m, 0):
		default:
			g.hit(TamperGoExit, r, "")
		}
		return true
	})
}

// passesM: call hands m on (f(m), x.RunTests(m)).
func passesM(call *ast.CallExpr, m string) bool {
	for _, a := range call.Args {
		if id, ok := a.(*ast.Ident); ok && id.Name == m {
			return true
		}
	}
	return false
}

// runCode reports whether e, in fn (whose *testing.M is m), is m.Run()'s
// result or a code that adds a failure: m.Run(), a non-zero integer
// constant, a variable of fn every assignment of which is one of those,
// or a call of a function of the file given m, every return of which is.
func (g *goScan) runCode(e ast.Expr, fn *ast.FuncDecl, m string, depth int) bool {
	if depth > 4 || m == "" {
		return false
	}
	switch e := ast.Unparen(e).(type) {
	case *ast.BasicLit:
		if e.Kind != token.INT {
			return false
		}
		v, err := strconv.ParseInt(e.Value, 0, 64)
		return err == nil && v != 0
	case *ast.CallExpr:
		if isSel(e.Fun, m, "Run") && len(e.Args) == 0 {
			return true
		}
		id, ok := e.Fun.(*ast.Ident)
		if !ok || g.funcs[id.Name] == nil {
			// A function of another file or package given m
			// (testRuntime.RunTests(m)): the scan cannot follow it, and one
			// in a _test.go file the change edits is held to this rule
			// where it is declared.
			return passesM(e, m)
		}
		callee := g.funcs[id.Name]
		if callee == fn {
			return false
		}
		// The callee's parameter that receives m.
		pm := ""
		i := 0
		for _, f := range callee.Type.Params.List {
			names := f.Names
			if len(names) == 0 {
				i++
				continue
			}
			for _, n := range names {
				if i < len(e.Args) {
					if a, ok := e.Args[i].(*ast.Ident); ok && a.Name == m {
						pm = n.Name
					}
				}
				i++
			}
		}
		if pm == "" {
			return false
		}
		ok = true
		returns := 0
		ast.Inspect(callee.Body, func(n ast.Node) bool {
			if _, lit := n.(*ast.FuncLit); lit {
				return false // a closure's returns are its own
			}
			if r, is := n.(*ast.ReturnStmt); is {
				returns++
				if len(r.Results) != 1 || !g.runCode(r.Results[0], callee, pm, depth+1) {
					ok = false
				}
			}
			return true
		})
		return ok && returns > 0
	case *ast.Ident:
		return g.runVar(e.Name, fn, m, depth)
	case *ast.UnaryExpr:
		// <-ch: every value fn sends on ch is a run code.
		ch, ok := e.X.(*ast.Ident)
		if e.Op != token.ARROW || !ok {
			return false
		}
		sends, good := 0, true
		ast.Inspect(fn.Body, func(n ast.Node) bool {
			if s, ok := n.(*ast.SendStmt); ok {
				if id, ok := s.Chan.(*ast.Ident); ok && id.Name == ch.Name {
					sends++
					good = good && g.runCode(s.Value, fn, m, depth+1)
				}
			}
			return true
		})
		return good && sends > 0
	}
	return false
}

// guardedAfter is the end of fn's first top-level statement if name !=
// 0 { os.Exit(name) } (or name > 0): after it, name holds 0 whenever the
// function goes on, so assigning it a constant adds no pass.
func (g *goScan) guardedAfter(fn *ast.FuncDecl, name string) token.Pos {
	for _, st := range fn.Body.List {
		ifs, ok := st.(*ast.IfStmt)
		if !ok || ifs.Else != nil || ifs.Init != nil {
			continue
		}
		b, ok := ifs.Cond.(*ast.BinaryExpr)
		if !ok || (b.Op != token.NEQ && b.Op != token.GTR) {
			continue
		}
		x, ok1 := b.X.(*ast.Ident)
		y, ok2 := b.Y.(*ast.BasicLit)
		if !ok1 || !ok2 || x.Name != name || y.Value != "0" || len(ifs.Body.List) == 0 {
			continue
		}
		es, ok := ifs.Body.List[len(ifs.Body.List)-1].(*ast.ExprStmt)
		if !ok {
			continue
		}
		if call, ok := es.X.(*ast.CallExpr); ok && isSel(call.Fun, g.osName, "Exit") && len(call.Args) == 1 {
			if a, ok := call.Args[0].(*ast.Ident); ok && a.Name == name {
				return ifs.End()
			}
		}
	}
	return token.NoPos
}

// runVar: every value fn gives the variable name is m.Run()'s result or a
// failure code, and fn gives it one from m.Run() or from a function
// returning it.
func (g *goScan) runVar(name string, fn *ast.FuncDecl, m string, depth int) bool {
	key := varKey{fn, name, m}
	if v, seen := g.vars[key]; seen {
		return v // also a cycle (a = b; b = a): false while it is weighed
	}
	if g.vars == nil {
		g.vars = map[varKey]bool{}
	}
	g.vars[key] = false
	v := g.weighVar(name, fn, m, depth)
	g.vars[key] = v
	return v
}

// varKey names a variable of a function as runVar weighs it.
type varKey struct {
	fn      *ast.FuncDecl
	name, m string
}

func (g *goScan) weighVar(name string, fn *ast.FuncDecl, m string, depth int) bool {
	ok, fromRun := true, false
	guard := g.guardedAfter(fn, name)
	check := func(v ast.Expr) {
		if lit, is := ast.Unparen(v).(*ast.BasicLit); is && lit.Kind == token.INT && guard != token.NoPos && v.Pos() > guard {
			return // after the guard: name is 0 until set, and a constant adds no pass
		}
		if !g.runCode(v, fn, m, depth+1) {
			ok = false
			return
		}
		if _, lit := ast.Unparen(v).(*ast.BasicLit); !lit {
			fromRun = true
		}
	}
	ast.Inspect(fn.Body, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.AssignStmt:
			for i, lhs := range n.Lhs {
				id, is := lhs.(*ast.Ident)
				if !is || id.Name != name {
					continue
				}
				if n.Tok != token.ASSIGN && n.Tok != token.DEFINE || len(n.Rhs) != len(n.Lhs) {
					ok = false
					continue
				}
				check(n.Rhs[i])
			}
		case *ast.ValueSpec:
			for i, id := range n.Names {
				if id.Name != name {
					continue
				}
				if i < len(n.Values) {
					check(n.Values[i])
				} else if len(n.Values) > 0 {
					ok = false
				}
			}
		case *ast.UnaryExpr:
			if id, is := n.X.(*ast.Ident); is && id.Name == name && n.Op == token.AND {
				ok = false // &code: written through a pointer
			}
		case *ast.IncDecStmt:
			if id, is := n.X.(*ast.Ident); is && id.Name == name {
				ok = false
			}
		}
		return true
	})
	return ok && fromRun
}
