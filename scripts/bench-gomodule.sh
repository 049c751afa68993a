#!/usr/bin/env bash
# Makes the benchmarks' Go module at DIR (bench-verify.sh):
# 8 packages whose tests compute for real (each hashes), one `unit` check
# with a go-json report, committed on main. The caller's git identity
# (GIT_AUTHOR_* …) is used.
set -euo pipefail
gomod=$1
rm -rf "$gomod"; mkdir -p "$gomod/.runmill"; cd "$gomod"
printf 'module example.com/work\n\ngo 1.22\n' > go.mod
for i in 1 2 3 4 5 6 7 8; do
  mkdir -p "p$i"
  cat > "p$i/p.go" <<GO
package p$i

import "crypto/sha256"

// Chain hashes b n times over.
func Chain(b []byte, n int) [32]byte {
	s := sha256.Sum256(b)
	for range n {
		s = sha256.Sum256(s[:])
	}
	return s
}
GO
  cat > "p$i/p_test.go" <<GO
package p$i

import "testing"

func TestChain(t *testing.T) {
	for k := range 4 {
		if a, b := Chain([]byte{byte(k)}, 2_500_000), Chain([]byte{byte(k)}, 2_500_000); a != b {
			t.Fatal("not deterministic")
		}
	}
}
GO
done
cat > .runmill/checks.yaml <<'Y'
checks:
  - id: unit
    run: go test -count=1 -json ./... > reports/unit.json
    report: {path: reports/unit.json, format: go-json}
    timeout: 10m
Y
printf 'reports/\n' > .gitignore
git init -qb main && git add -A && git commit -qm base
