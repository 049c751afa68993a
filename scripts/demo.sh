#!/usr/bin/env bash
# The main job on a fresh Debian/Ubuntu machine (README "Run runmill"): set up
# (containerd and runc when missing), build runmill, build the example
# repository (examples/shop) and verify its two candidate branches for real,
# each check in a containerd task; then inspect the last run.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/setup.sh
go build -trimpath -o bin/runmill ./cmd/runmill
work=${RUNMILL_DEMO_DIR:-$(mktemp -d)}
examples/make-shop-repo.sh "$work/shop"
# The operator policy lives outside the repository. pr-only with
# fail_on_skipped_check: false is the spec's starter mode: checks without a
# report (vet, migrations) may pass unproven; a person still owns the merge.
cat > "$work/policy.yaml" <<'YAML'
autonomy: pr-only
verification:
  fail_on_skipped_check: false
YAML
runmill=$PWD/bin/runmill
status=0
for cand in good bad; do
	echo
	echo "== runmill verify --candidate $cand"
	set +e
	"$runmill" verify --repo "$work/shop" --base main --candidate "$cand" --policy "$work/policy.yaml" \
		--out "$work/state" --agent-proposals - <<<"vet
curl-evil-sh"
	code=$?
	set -e
	echo "(exit $code: 0 merge-ready, 1 not merge-ready)"
	case "$cand:$code" in
	good:0 | bad:1) ;;
	*) status=1 ;;
	esac
done
echo
echo "== runmill inspect (the last run)"
"$runmill" inspect --out "$work/state" "$(ls "$work/state/runs" | tail -n 1)"
exit $status
