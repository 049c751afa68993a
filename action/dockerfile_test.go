package action_test

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// docker build is not available on these machines, so the Dockerfile is
// parsed here and held to hadolint's rules (the DL codes below are
// hadolint's), and its build stage to the command scripts/test.sh runs.

type instruction struct {
	Line    int    // line of the keyword
	Cmd     string // upper case: FROM, RUN …
	Args    string // continuation lines joined, comments dropped
	Comment string // the comment lines just above it
}

// parseDockerfile splits a Dockerfile into instructions the way BuildKit
// does for the parts the rules need: "\" continues a line, a line whose
// first non-blank character is # is a comment (also inside a
// continuation), blank lines separate nothing.
func parseDockerfile(src string) ([]instruction, error) {
	var out []instruction
	var cur *instruction
	var comment []string
	for i, raw := range strings.Split(strings.ReplaceAll(src, "\r\n", "\n"), "\n") {
		line := strings.TrimSpace(raw)
		if strings.HasPrefix(line, "#") {
			if cur == nil {
				comment = append(comment, strings.TrimSpace(strings.TrimPrefix(line, "#")))
			}
			continue
		}
		if line == "" {
			if cur == nil {
				comment = nil
			}
			continue
		}
		cont := strings.HasSuffix(line, "\\")
		line = strings.TrimSpace(strings.TrimSuffix(line, "\\"))
		if cur == nil {
			kw, args, _ := strings.Cut(line, " ")
			if !regexp.MustCompile(`^[A-Za-z]+$`).MatchString(kw) {
				return nil, fmt.Errorf("line %d: %q is not an instruction", i+1, kw)
			}
			out = append(out, instruction{Line: i + 1, Cmd: strings.ToUpper(kw), Args: strings.TrimSpace(args), Comment: strings.Join(comment, " ")})
			cur = &out[len(out)-1]
			comment = nil
		} else {
			cur.Args += " " + line
		}
		if !cont {
			cur = nil
		}
	}
	if cur != nil {
		return nil, fmt.Errorf("the Dockerfile ends inside a continued line")
	}
	return out, nil
}

type stage struct {
	name, image string
	ins         []instruction
}

func stages(ins []instruction) []stage {
	var out []stage
	for _, in := range ins {
		if in.Cmd == "FROM" {
			f := append(strings.Fields(in.Args), "")
			s := stage{image: f[0]}
			if len(f) == 4 && strings.EqualFold(f[1], "AS") {
				s.name = f[2]
			}
			out = append(out, s)
		}
		if len(out) > 0 {
			out[len(out)-1].ins = append(out[len(out)-1].ins, in)
		}
	}
	return out
}

// lint returns every rule the Dockerfile breaks, as "line N: DLxxxx …".
func lint(ins []instruction) []string {
	var bad []string
	add := func(in instruction, rule, format string, args ...any) {
		bad = append(bad, fmt.Sprintf("line %d: %s %s", in.Line, rule, fmt.Sprintf(format, args...)))
	}
	st := stages(ins)
	names := map[string]bool{}
	pipefail := false
	for _, s := range st {
		from := s.ins[0]
		switch img := s.image; {
		case names[img]:
		case strings.Contains(img, "@sha256:"):
		case !strings.Contains(img, ":"):
			add(from, "DL3006", "image %s has no tag: pin a version or digest", img)
		case strings.HasSuffix(img, ":latest"):
			add(from, "DL3007", "image %s uses latest: pin a version or digest", img)
		case !regexp.MustCompile(`:[^:]*\d`).MatchString(img):
			add(from, "DL3006", "image %s: the tag names no version", img)
		}
		if s.name != "" {
			names[s.name] = true
		}
		for _, in := range s.ins {
			a := in.Args
			switch in.Cmd {
			case "ADD":
				if !regexp.MustCompile(`https?://`).MatchString(a) {
					add(in, "DL3020", "use COPY for files and folders")
				}
			case "SHELL":
				pipefail = strings.Contains(a, "pipefail")
			case "ENTRYPOINT", "CMD":
				if !strings.HasPrefix(a, "[") {
					add(in, "DL3025", "%s in shell form: use the JSON form", in.Cmd)
				}
			case "RUN":
				if regexp.MustCompile(`(^|[;&|(]\s*)cd\s`).MatchString(a) {
					add(in, "DL3003", "use WORKDIR to switch directory")
				}
				if regexp.MustCompile(`(^|\s)apt\s`).MatchString(a) {
					add(in, "DL3027", "use apt-get, not apt")
				}
				if regexp.MustCompile(`[^|]\|[^|]`).MatchString(a) && !pipefail {
					add(in, "DL4006", "a pipe without SHELL [\"/bin/bash\", \"-o\", \"pipefail\", \"-c\"]")
				}
				if strings.Contains(a, "apt-get install") {
					if !strings.Contains(a, "--no-install-recommends") {
						add(in, "DL3015", "apt-get install without --no-install-recommends")
					}
					if !regexp.MustCompile(`apt-get install[^&;]*\s-y\b`).MatchString(a) {
						add(in, "DL3014", "apt-get install without -y")
					}
					if !strings.Contains(a, "apt-get update") {
						add(in, "DL3009", "apt-get install without apt-get update in the same RUN")
					}
					if !strings.Contains(a, "rm -rf /var/lib/apt/lists/*") {
						add(in, "DL3009", "the apt lists are not deleted in the same RUN")
					}
				}
			}
		}
	}
	if len(st) < 2 {
		bad = append(bad, "a multi-stage build: the toolchain must not ship in the image")
		return bad
	}
	final := st[len(st)-1]
	user := ""
	var userIns instruction
	for _, in := range final.ins {
		if in.Cmd == "USER" {
			user, userIns = in.Args, in
		}
	}
	switch {
	case user == "":
		bad = append(bad, "DL3002-style: the final stage sets no USER: say which user it runs as, and why when it is root")
	case (user == "root" || user == "0") && !strings.HasPrefix(userIns.Comment, "root:"):
		add(userIns, "DL3002", "the final stage runs as root without a comment starting \"root:\" that says why")
	}
	return bad
}

func TestDockerfile(t *testing.T) {
	src, err := os.ReadFile(filepath.Join(actionRoot(t), "Dockerfile"))
	if err != nil {
		t.Fatal(err)
	}
	ins, err := parseDockerfile(string(src))
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range lint(ins) {
		t.Error(b)
	}
	st := stages(ins)
	final := st[len(st)-1]
	var copied, pkgs bool
	for _, in := range final.ins {
		if in.Cmd == "COPY" && strings.HasPrefix(in.Args, "--from="+st[0].name+" ") && strings.Contains(in.Args, "/bin/runmill") {
			copied = true
		}
		if in.Cmd == "RUN" && regexp.MustCompile(`apt-get install .*\bcontainerd\b`).MatchString(in.Args) && strings.Contains(in.Args, " runc") && strings.Contains(in.Args, " git") {
			pkgs = true
		}
	}
	if !copied || !pkgs {
		t.Errorf("the final stage must copy runmill from the build stage (%v) and install containerd, runc and git (%v)", copied, pkgs)
	}

	// The build stage's go build is the line scripts/test.sh runs, and the
	// action builds with the same flags.
	var build []string
	for _, in := range st[0].ins {
		if in.Cmd == "RUN" && strings.Contains(in.Args, "go build") {
			build = append(build, in.Args)
		}
	}
	test, err := os.ReadFile(filepath.Join(actionRoot(t), "scripts", "test.sh"))
	if err != nil {
		t.Fatal(err)
	}
	var testBuild []string
	for _, l := range strings.Split(string(test), "\n") {
		if strings.Contains(l, "go build") && !strings.HasPrefix(strings.TrimSpace(l), "#") {
			testBuild = append(testBuild, strings.TrimSpace(l))
		}
	}
	if len(build) != 1 || len(testBuild) != 1 || build[0] != testBuild[0] {
		t.Errorf("Dockerfile builds with %q, scripts/test.sh with %q: they must be the same one command", build, testBuild)
	}
	// The action's source build and the release's are one function,
	// build_runmill (issue 27): the same static, trimmed build, stamped with
	// the version and reproducible (no VCS stamp).
	lib, err := os.ReadFile(filepath.Join(actionRoot(t), "action", "lib.sh"))
	if err != nil {
		t.Fatal(err)
	}
	fn := regexp.MustCompile(`(?s)\nbuild_runmill\(\) \{\n(.*?)\n\}\n`).FindSubmatch(lib)
	if fn == nil {
		t.Fatal("action/lib.sh defines no build_runmill")
	}
	for _, want := range []string{"CGO_ENABLED=0", `"$go" build -trimpath -buildvcs=false`, "-X github.com/runmill/verify/internal/cli.Version=$version", "./cmd/runmill"} {
		if !strings.Contains(string(fn[1]), want) {
			t.Errorf("build_runmill does not build with %q:\n%s", want, fn[1])
		}
	}
	for _, f := range []string{"action/build.sh", "scripts/release.sh"} {
		b, err := os.ReadFile(filepath.Join(actionRoot(t), f))
		if err != nil {
			t.Fatal(err)
		}
		if !regexp.MustCompile(`(?m)^\s*build_runmill "\$go" `).Match(b) {
			t.Errorf("%s does not build with build_runmill", f)
		}
	}
}

// TestDockerfileLint: each rule catches what it is for.
func TestDockerfileLint(t *testing.T) {
	good := "FROM golang:1.26.8 AS build\nRUN CGO_ENABLED=0 go build -trimpath -o bin/runmill ./cmd/runmill\n" +
		"FROM debian:13.2-slim\nRUN apt-get update && apt-get install -y --no-install-recommends git && rm -rf /var/lib/apt/lists/*\n" +
		"COPY --from=build /src/bin/runmill /usr/local/bin/runmill\nUSER runmill\nENTRYPOINT [\"runmill\"]\n"
	for _, tc := range []struct{ name, from, to, rule string }{
		{"untagged base", "FROM debian:13.2-slim", "FROM debian", "DL3006"},
		{"latest", "FROM debian:13.2-slim", "FROM debian:latest", "DL3007"},
		{"codename tag", "FROM debian:13.2-slim", "FROM debian:stable-slim", "DL3006"},
		{"recommends", "--no-install-recommends ", "", "DL3015"},
		{"no -y", "install -y", "install", "DL3014"},
		{"lists kept", " && rm -rf /var/lib/apt/lists/*", "", "DL3009"},
		{"apt", "apt-get install", "apt install", "DL3027"},
		{"add", "COPY --from=build", "ADD", "DL3020"},
		{"shell form", `ENTRYPOINT ["runmill"]`, "ENTRYPOINT runmill", "DL3025"},
		{"cd", "RUN CGO_ENABLED=0", "RUN cd /src && CGO_ENABLED=0", "DL3003"},
		{"pipe", "RUN CGO_ENABLED=0", "RUN echo x | CGO_ENABLED=0", "DL4006"},
		{"root unexplained", "USER runmill", "USER root", "DL3002"},
		{"no user", "USER runmill\n", "", "DL3002"},
		{"single stage", "FROM golang:1.26.8 AS build\nRUN CGO_ENABLED=0 go build -trimpath -o bin/runmill ./cmd/runmill\n", "", "multi-stage"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if !strings.Contains(good, tc.from) {
				t.Fatalf("the good Dockerfile has no %q", tc.from)
			}
			ins, err := parseDockerfile(good)
			if err != nil {
				t.Fatal(err)
			}
			if bad := lint(ins); len(bad) != 0 {
				t.Fatalf("the good Dockerfile breaks %q", bad)
			}
			ins, err = parseDockerfile(strings.Replace(good, tc.from, tc.to, 1))
			if err != nil {
				t.Fatal(err)
			}
			bad := lint(ins)
			if !strings.Contains(strings.Join(bad, "\n"), tc.rule) {
				t.Errorf("lint %q, want %s", bad, tc.rule)
			}
		})
	}
	ins, _ := parseDockerfile("FROM debian:13.2-slim\n# root: containerd needs it\nUSER root\nENTRYPOINT [\"x\"]\n")
	if bad := lint(ins); len(bad) != 1 || !strings.Contains(bad[0], "multi-stage") {
		t.Errorf("a justified root: %q", bad)
	}
}

// FuzzParseDockerfile: the parser never panics, and every instruction it
// returns has a keyword and a line inside the input.
func FuzzParseDockerfile(f *testing.F) {
	f.Add("FROM a:1 AS b\nRUN x \\\n  # c\n  y\n")
	f.Add("# syntax=docker/dockerfile:1\n\nUSER root\n")
	f.Fuzz(func(t *testing.T, src string) {
		ins, err := parseDockerfile(src)
		if err != nil {
			return
		}
		lines := strings.Count(src, "\n") + 1
		for _, in := range ins {
			if in.Cmd == "" || in.Line < 1 || in.Line > lines {
				t.Fatalf("instruction %+v from %q", in, src)
			}
		}
		_ = lint(ins)
	})
}
