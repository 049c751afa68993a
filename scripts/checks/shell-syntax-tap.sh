#!/bin/sh
# bash -n over every tracked shell script as a TAP report, one point each.
set -eu
files=$(git ls-files '*.sh' .ci/run)
n=$(printf '%s\n' "$files" | grep -c . || true)
echo "1..$n"
i=0
status=0
for f in $files; do
	i=$((i + 1))
	if bash -n "$f" 2>/dev/null; then
		echo "ok $i $f"
	else
		echo "not ok $i $f"
		status=1
	fi
done
exit $status
