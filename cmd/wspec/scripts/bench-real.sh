#!/usr/bin/env bash
# bench-real.sh [ROUNDS [NAME...]] (from the repository root): the real GGUF files that
# fetch-real-models.sh fetches, each through `wspec generate` on the first adapter and through
# llama.cpp (node-llama-cpp) on its CPU backend (1 thread) and its Vulkan backend, alternated in
# each round (ROUNDS, default 2), each run under /usr/bin/time -v for its peak RSS. llama.cpp
# runs from the node-llama-cpp that the oracle tier installs into .wspec/oracle
# (CI=1 go test -tags oracle -run LlamaCpp ./spec/engine/). Prints each run's figures.
set -euo pipefail
rounds=${1:-2}; shift || true
names=("$@")
[ ${#names[@]} -gt 0 ] || names=(smollm2-135m-instruct-q4_1 gemma-3-270m-q4_k_m qwen2.5-coder-0.5b-instruct-q4_k_m qwen2.5-coder-1.5b-instruct-q4_k_m)
P="The quick brown fox jumps over the lazy dog while the cat sleeps under the old oak tree in the garden."
bash cmd/wspec/scripts/fetch-real-models.sh "${names[@]}" >/dev/null
dir=${WSPEC_HOME:-.wspec}/models/real
bin=$(mktemp -d)
trap 'rm -rf "$bin"' EXIT
go build -o "$bin/wspec" ./cmd/wspec
oracle=.wspec/oracle
[ -d "$oracle/node_modules/node-llama-cpp" ] || { echo "bench-real: no node-llama-cpp in $oracle (run the oracle tier first)" >&2; exit 1; }
cp spec/engine/testdata/llamacpp_bench.mjs "$oracle/"
for r in $(seq "$rounds"); do
  echo "== round $r"
  for m in "${names[@]}"; do
    f=$(cd "$dir" && pwd)/$m.gguf
    echo "-- wspec $m"
    /usr/bin/time -v "$bin/wspec" generate --model "$f" --max-tokens 33 --ignore-eos --temperature 0 "$P" 2>&1 >/dev/null | grep -E 'loaded in|prefill|decode:|Maximum resident' | sed 's/^\t//'
    for b in cpu vulkan; do
      echo "-- llama.cpp $b $m"
      (cd "$oracle" && GGML_VK_VISIBLE_DEVICES=0 /usr/bin/time -v node llamacpp_bench.mjs "$f" $b "$P" 32 2>&1 | grep -E '^\{|Maximum resident' | sed 's/^\t//')
    done
  done
done
