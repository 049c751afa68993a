#!/usr/bin/env bash
# The main job on a fresh Debian/Ubuntu machine (README "Run runmill"): set up
# (containerd and runc when missing), build runmill, build the example
# repository (examples/shop), verify its two candidate branches for real (each
# check in a containerd task) with a signing key, inspect the last run, and
# verify the merge-ready run's signed bundle offline against independently
# observed expectations.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/setup.sh
CGO_ENABLED=0 go build -trimpath -o bin/runmill ./cmd/runmill
runmill=$PWD/bin/runmill
work=${RUNMILL_DEMO_DIR:-$(mktemp -d)}
examples/make-shop-repo.sh "$work/shop"
# The operator's policy and key live outside the repository.
cat > "$work/policy.yaml" <<'YAML'
autonomy: pr-only
verification:
  fail_on_skipped_check: true
YAML
"$runmill" evidence keygen --key-out "$work/runmill.key" --trust-out "$work/trust.json" --valid-for 24h
status=0
verify() {
	local cand=$1 want=$2 code
	echo
	echo "== runmill verify --candidate $cand"
	set +e
	"$runmill" verify --repo "$work/shop" --base main --candidate "$cand" --policy "$work/policy.yaml" \
		--signing-key "$work/runmill.key" --out "$work/state" --agent-proposals - <<<"vet
curl-evil-sh"
	code=$?
	set -e
	echo "(exit $code: 0 merge-ready, 1 not merge-ready)"
	[ "$code" = "$want" ] || status=1
}
verify good 0
good_run=$(ls "$work/state/runs" | tail -n 1)
verify bad 1
echo
echo "== runmill inspect (the bad run)"
"$runmill" inspect --out "$work/state" "$(ls "$work/state/runs" | tail -n 1)"
echo
echo "== runmill evidence verify (the good run's bundle, offline)"
"$runmill" evidence expect --repo "$work/shop" --base main --candidate good --policy "$work/policy.yaml" \
	--out "$work/state" > "$work/expectations.json"
"$runmill" evidence verify "$work/state/runs/$good_run/evidence.json" --trust "$work/trust.json" \
	--expectations "$work/expectations.json" --artifacts-dir "$work/state/runs/$good_run/artifacts" || status=1
echo
echo "== runmill evidence verify (the same run's terminal bundle: event chain, cleanup, ledgers)"
"$runmill" evidence expect --terminal --repo "$work/shop" --base main --candidate good > "$work/terminal-expectations.json"
"$runmill" evidence verify "$work/state/runs/$good_run/terminal.json" --trust "$work/trust.json" \
	--expectations "$work/terminal-expectations.json" || status=1
exit $status
