#!/bin/sh
# gofmt over every tracked Go file as a TAP report: one point per file, so
# the check's coverage is proven and a file that disappears is noticed.
set -eu
files=$(git ls-files '*.go')
n=$(printf '%s\n' "$files" | grep -c . || true)
echo "1..$n"
i=0
status=0
for f in $files; do
	i=$((i + 1))
	if [ -z "$(gofmt -l "$f")" ]; then
		echo "ok $i $f"
	else
		echo "not ok $i $f"
		status=1
	fi
done
exit $status
