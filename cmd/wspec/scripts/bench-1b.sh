#!/usr/bin/env bash
# bench-1b.sh [DIR [ROUNDS]] (from the repository root): Llama-3.2-1B's shape with random
# weights, written into DIR (default .wspec/tmp/bench-1b; kept between runs) as an F16 folder,
# an F16 GGUF file and a Q4_K_M GGUF file; then, for ROUNDS rounds (3), alternated in each: the
# 4096² f16 mat-vec (the memory floor), wspec on the F16 GGUF, wspec on the Q4_K_M GGUF,
# llama.cpp's Vulkan backend on both files (on the same device) and its CPU backend on one
# thread on the F16 file; each under /usr/bin/time -v. llama.cpp runs through node-llama-cpp,
# which the oracle tier installs into .wspec/oracle
# (CI=1 go test -tags oracle -run LlamaCpp ./spec/engine/). Prints each run's figures.
set -euo pipefail
dir=${1:-.wspec/tmp/bench-1b} rounds=${2:-3}
P="The quick brown fox jumps over the lazy dog while the cat sleeps."
mkdir -p "$dir"
dir=$(cd "$dir" && pwd)
go build -o "$dir/wspec" ./cmd/wspec
go test -c -o "$dir/selftest.test" ./runtime/selftest
[ -f "$dir/l1b/config.json" ] || "$dir/wspec" synth --shape llama-3.2-1b --out "$dir/l1b"
[ -f "$dir/l1b.gguf" ] || "$dir/wspec" convert --from hf "$dir/l1b" --to gguf --out "$dir/l1b.gguf"
[ -f "$dir/l1b-q4km.gguf" ] || "$dir/wspec" convert --from hf "$dir/l1b" --to gguf --out "$dir/l1b-q4km.gguf" --outtype q4_k_m
oracle=.wspec/oracle
[ -d "$oracle/node_modules/node-llama-cpp" ] || { echo "bench-1b: no node-llama-cpp in $oracle (run the oracle tier first)" >&2; exit 1; }
cp spec/engine/testdata/llamacpp_bench.mjs "$oracle/"
peak() { sed -n 's/.*Maximum resident set size (kbytes): \([0-9]*\)/peak RSS \1 KiB/p'; }
for r in $(seq "$rounds"); do
  echo "== round $r"
  (cd runtime/selftest && "$dir/selftest.test" -test.run '^$' -test.bench 'Matvec4096/f16$' -test.benchtime 30x | grep ns/op)
  for m in l1b.gguf l1b-q4km.gguf; do
    echo "-- wspec $m"
    /usr/bin/time -v "$dir/wspec" generate --model "$dir/$m" --max-tokens 33 --ignore-eos "$P" 2>&1 >/dev/null | grep -E 'loaded in|prefill|decode:|Maximum resident' | sed 's/^\t//'
    echo "-- llama.cpp vulkan $m"
    (cd "$oracle" && GGML_VK_VISIBLE_DEVICES=0 /usr/bin/time -v node llamacpp_bench.mjs "$dir/$m" vulkan "$P" 32 2>&1 | grep -E '^\{|Maximum resident' | sed 's/^\t//')
  done
  echo "-- llama.cpp cpu, 1 thread, l1b.gguf"
  (cd "$oracle" && /usr/bin/time -v node llamacpp_bench.mjs "$dir/l1b.gguf" cpu "$P" 32 2>&1 | grep -E '^\{|Maximum resident' | sed 's/^\t//')
done
