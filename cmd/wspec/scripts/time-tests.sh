#!/usr/bin/env bash
# time-tests.sh [OUT] (from the repository root, after ./setup.sh): the README's test command
# with an empty Go build cache and an empty Mesa shader cache, as a newcomer runs it; prints
# the exit status and the seconds it took. OUT (default .wspec/tmp/time-tests) holds the caches
# while it runs, the log and go test's JSON (per-test times); the caches are removed after.
set -u
out=${1:-.wspec/tmp/time-tests}
rm -rf "$out" && mkdir -p "$out" && out=$(cd "$out" && pwd)
export GOCACHE=$out/gocache MESA_SHADER_CACHE_DIR=$out/mesa
start=$(date +%s.%N)
( ./setup.sh && go test -count=1 -timeout 30m -json ./... > "$out/test.json" ) > "$out/log" 2>&1
rc=$?
end=$(date +%s.%N)
rm -rf "$GOCACHE" "$MESA_SHADER_CACHE_DIR"
echo "rc=$rc seconds=$(python3 -c "print(round($end - $start, 1))")"
