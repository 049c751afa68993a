#!/bin/sh
# gofmt as a TAP report: one point, so the check's coverage is proven and its
# identity is stable across commits.
unformatted=$(gofmt -l . 2>&1)
echo "1..1"
if [ -z "$unformatted" ]; then
	echo "ok 1 gofmt"
else
	echo "not ok 1 gofmt"
	echo "  ---"
	echo "  message: 'not gofmt-formatted: $(echo $unformatted)'"
	echo "  ..."
	exit 1
fi
