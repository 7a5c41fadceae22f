#!/bin/sh
# test.sh - build from scratch in _build/ and run the whole test suite.
# This is the README's test command and what CI runs.
set -eu
cd "$(dirname "$0")"
. ./.ci/need-deps
./autogen.sh >/dev/null 2>&1 || ./autogen.sh
rm -rf _build
mkdir _build
cd _build
../configure --enable-werror -q
make -j"$(nproc)" >/dev/null
status=0
make -j"$(nproc)" check || status=$?
# One closing line that any reader understands.
if [ -f test-suite.log ]; then
	sed -n 's/^# \(TOTAL\|PASS\|SKIP\|XFAIL\|FAIL\|XPASS\|ERROR\): *\([0-9]*\)$/\1 \2/p' \
		test-suite.log > counts.txt
	pass=$(awk '$1=="PASS"{print $2}' counts.txt)
	fail=$(awk '$1=="FAIL"||$1=="ERROR"||$1=="XPASS"{s+=$2} END{print s+0}' counts.txt)
	skip=$(awk '$1=="SKIP"{print $2}' counts.txt)
	echo "${pass:-0} passed, ${fail:-0} failed, ${skip:-0} skipped"
fi
for f in $(find . -name '*.log' ! -name config.log ! -name test-suite.log); do
	if grep -q -E '^(not ok|FAIL)' "$f" 2>/dev/null; then
		echo "---- $f"; cat "$f"
	fi
done
exit $status
