#!/usr/bin/env bash
# The main job on a fresh Debian/Ubuntu machine (README "Run runmill"): set up,
# build runmill, build the example repository (examples/shop) and resolve what
# each of its two candidate branches must pass.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/setup.sh
go build -trimpath -o bin/runmill ./cmd/runmill
work=${RUNMILL_DEMO_DIR:-$(mktemp -d)}
examples/make-shop-repo.sh "$work/shop"
for cand in good bad; do
	echo "== runmill manifest --repo $work/shop --base main --candidate $cand" >&2
	bin/runmill manifest --repo "$work/shop" --base main --candidate "$cand" --agent-proposals - <<<"vet
curl-evil-sh" || exit $?
done
echo "(runmill verify, which runs these checks in the sandbox, is being built: see the open issues)" >&2
