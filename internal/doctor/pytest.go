package doctor

import (
	"context"
	"fmt"
	"regexp"
	"sort"
	"strings"

	"github.com/runmill/verify/internal/engine"
	"github.com/runmill/verify/internal/initpolicy"
	"github.com/runmill/verify/internal/sandbox"
	"github.com/runmill/verify/pkg/rmerr"
)

// pytestCall finds the interpreter a command runs pytest with: the word
// before `-m pytest` (python3, python3.11, /opt/py/bin/python3), after a
// shell separator or an environment assignment.
var pytestCall = regexp.MustCompile(`(?:^|[\s;&|(])((?:[^\s;&|()'"=]*/)?python[0-9.]*)\s+-m\s+pytest\b`)

// checkPytest proves, for each interpreter the governing checks run pytest
// with, that `INTERP -m pytest --version` runs inside the sandbox with the
// operator's host paths: the interpreter the task's PATH resolves to, its
// environment, its user. init proves the same on the host before it writes
// the check (RM-INIT-003).
func checkPytest(ctx context.Context, sb *sandbox.Sandbox, connErr error, pol *engine.Policies, polErr error) Result {
	if polErr != nil {
		r := failed(Pytest, polErr)
		r.Detail = "cannot read which checks run pytest: " + r.Detail
		return r
	}
	users, inImage := pytestUsers(pol)
	imageNote := ""
	if len(inImage) > 0 {
		imageNote = fmt.Sprintf("; %s run in an image, not probed here", strings.Join(inImage, ", "))
	}
	if len(users) == 0 {
		return Result{Name: Pytest, OK: true, Detail: "no check runs pytest on the host toolchain" + imageNote}
	}
	if connErr != nil {
		r := failed(Pytest, connErr)
		r.Detail = "cannot run python3 -m pytest in the sandbox: " + r.Detail
		return r
	}
	interps := make([]string, 0, len(users))
	for i := range users {
		interps = append(interps, i)
	}
	sort.Strings(interps)
	var details []string
	for _, interp := range interps {
		ids := users[interp]
		sort.Strings(ids)
		d, err := probePytest(ctx, sb, pol.HostPaths(), interp, ids)
		if err != nil {
			return *err
		}
		details = append(details, d)
	}
	return Result{Name: Pytest, OK: true, Detail: "python3 -m pytest runs in the sandbox: " + strings.Join(details, "; ") + imageNote}
}

// pytestUsers maps each interpreter the checks run pytest with on the host
// toolchain to their ids (the operator's definitions win), and lists the
// checks that run pytest in an image, sorted.
func pytestUsers(pol *engine.Policies) (users map[string][]string, inImage []string) {
	users = map[string][]string{}
	for id, c := range pol.Definitions() {
		m := pytestCall.FindStringSubmatch(c.Run)
		switch {
		case m == nil:
		case c.Image != "":
			inImage = append(inImage, id)
		default:
			users[m[1]] = append(users[m[1]], id)
		}
	}
	sort.Strings(inImage)
	return users, inImage
}

// probePytest runs `interp -m pytest --version` in the sandbox: the detail
// of a pass, or the failed result.
func probePytest(ctx context.Context, sb *sandbox.Sandbox, hostPaths []string, interp string, ids []string) (string, *Result) {
	q := shellWord(interp)
	// command -v names the interpreter the task's PATH resolves to, on
	// the first line, for the detail and the fix.
	res, err := engine.ProbeTool(ctx, sb, hostPaths, "command -v "+q+" || { echo "+q+": not found on the sandbox PATH; exit 127; }; "+q+" -m pytest -p no:cacheprovider --version 2>&1")
	if err != nil {
		r := failed(Pytest, err)
		r.Detail = "running python3 -m pytest in the sandbox: " + r.Detail
		return "", &r
	}
	lines := strings.Split(strings.TrimSpace(string(res.Stdout.Kept)), "\n")
	resolved, said := interp, ""
	if len(lines) > 0 && strings.HasPrefix(lines[0], "/") && res.ExitCode != 127 {
		resolved = lines[0]
	}
	if len(lines) > 1 || res.ExitCode == 127 {
		said = strings.TrimSpace(lines[len(lines)-1])
	}
	if res.ExitCode != 0 {
		if said == "" {
			said = strings.TrimSpace(string(res.Stderr.Kept))
		}
		fix := initpolicy.PytestFix(resolved, "")
		if len(hostPaths) > 0 {
			fix += ", or add the interpreter's prefix to sandbox.host_paths"
		}
		r := failed(Pytest, rmerr.New(rmerr.InitToolchain, "%s -m pytest fails in the sandbox (checks: %s; exit %d): %s",
			resolved, strings.Join(ids, ", "), res.ExitCode, said).WithHint("%s", fix))
		return "", &r
	}
	return fmt.Sprintf("%s: %s (checks: %s)", resolved, said, strings.Join(ids, ", ")), nil
}

// shellWord quotes s for /bin/sh unless it is plainly safe.
func shellWord(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789/._-") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
