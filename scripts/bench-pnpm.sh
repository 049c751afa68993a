#!/usr/bin/env bash
# The pnpm strategy's second-side import (docs/benchmarks.md § pnpm): the
# candidate of an ms 2.1.2 -> 2.1.3 bump imported into a cache holding the
# base, real pnpm 9 installs from the npm registry (scripts/setup.sh puts
# pnpm where the test finds it). Byte columns do not depend on load.
set -euo pipefail
cd "$(dirname "$0")/.."
uptime
go test -run '^$' -bench 'BenchmarkPnpmImportSecondSide' -benchtime 5x -count 3 ./internal/deps
uptime
