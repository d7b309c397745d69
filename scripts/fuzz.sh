#!/usr/bin/env bash
# make fuzz: finds every fuzz target of the module (go test -list '^Fuzz', package by
# package) and runs each for FUZZTIME (default 60s). A crasher is written by Go
# under the package's testdata/fuzz/<Target>/, where every later `go test` replays
# it: commit it with the fix. Exits non-zero when any target failed.
set -uo pipefail
cd "$(dirname "$0")/.."
GO=${GO:-go}
FUZZTIME=${FUZZTIME:-60s}
failed=()
n=0
for pkg in $($GO list ./...); do
	targets=$($GO test -list '^Fuzz' "$pkg" 2>/dev/null | grep '^Fuzz' || true)
	for t in $targets; do
		n=$((n + 1))
		echo "fuzz: $pkg $t for $FUZZTIME"
		if ! $GO test -run '^$' -fuzz "^${t}\$" -fuzztime "$FUZZTIME" "$pkg"; then
			failed+=("$pkg $t")
		fi
	done
done
echo "fuzz: $n targets run for $FUZZTIME each, ${#failed[@]} failed"
for f in "${failed[@]}"; do
	echo "fuzz: FAILED $f (crasher under its package's testdata/fuzz)"
done
[ ${#failed[@]} -eq 0 ]
