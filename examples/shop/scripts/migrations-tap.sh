#!/bin/sh
# Every migration must end its statement with ';': one TAP point per file.
set -e
n=$(ls migrations/*.sql | wc -l)
echo "1..$n"
i=0
status=0
for f in migrations/*.sql; do
	i=$((i + 1))
	if grep -q ';' "$f"; then
		echo "ok $i $f"
	else
		echo "not ok $i $f"
		status=1
	fi
done
exit $status
