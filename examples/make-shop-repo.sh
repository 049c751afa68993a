#!/usr/bin/env bash
# Build the example repository in DIR: main (examples/shop), and the branches
# good and bad described in examples/shop/README.md.
set -euo pipefail
dir=${1:?usage: make-shop-repo.sh DIR}
src=$(cd "$(dirname "$0")/shop" && pwd)
rm -rf "$dir"
mkdir -p "$dir"
cp -a "$src/." "$dir/"
cd "$dir"
export GIT_CONFIG_NOSYSTEM=1 GIT_CONFIG_GLOBAL=/dev/null
export GIT_AUTHOR_NAME=demo GIT_AUTHOR_EMAIL=demo@example.invalid GIT_COMMITTER_NAME=demo GIT_COMMITTER_EMAIL=demo@example.invalid
printf 'reports/\n' > .gitignore
git init -q -b main
git add -A && git commit -qm "shop: base"

git checkout -qb good main
cat >> cart/cart.go <<'GO'

// Discount applies a percentage discount, rounding down.
func Discount(cents, percent int64) int64 { return cents * (100 - percent) / 100 }
GO
cat >> cart/cart_test.go <<'GO'

func TestDiscount(t *testing.T) {
	if got := Discount(1000, 15); got != 850 {
		t.Fatalf("Discount = %d", got)
	}
}
GO
printf 'alter table carts add column discount integer;\n' > migrations/002_discount.sql
git add -A && git commit -qm "good: discounts"

git checkout -qb bad main
# Delete a test that passes at base, and try to drop the vet check.
python3 - <<'PY'
import re
p = "cart/cart_test.go"
s = open(p).read()
s = re.sub(r"\nfunc TestRejectsZeroQty.*?\n}\n", "\n", s, flags=re.S)
open(p, "w").write(s)
PY
sed -i '/- id: vet/,+1d' .runmill/checks.yaml
# Rewrite a fixture during the check (the checkout is read-only: it fails).
sed -i 's|b, err := os.ReadFile("testdata/prices.txt")|os.WriteFile("testdata/prices.txt", []byte("a 1\\n"), 0o644)\n\tb, err := os.ReadFile("testdata/prices.txt")|' cart/cart_test.go
python3 - <<'PY'
p = "cart/cart_test.go"
s = open(p).read()
s = s.replace('os.WriteFile("testdata/prices.txt", []byte("a 1\\n"), 0o644)', 'if err := os.WriteFile("testdata/prices.txt", []byte("a 1\\n"), 0o644); err != nil {\n\t\tt.Fatalf("rewriting the fixture: %v", err)\n\t}')
open(p, "w").write(s)
PY
mkdir -p web && printf "describe.only('cart', () => {});\n" > web/cart.test.js
printf 'alter table carts add column note text\n' > migrations/002_note.sql
git add -A && git commit -qm "bad: drop a test, relax policy, focus a test"
git checkout -q main
