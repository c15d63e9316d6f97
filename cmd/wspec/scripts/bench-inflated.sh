#!/usr/bin/env bash
# bench-inflated.sh [WSPEC] [DRAFTERS] [KS] [TEMPERATURES] [PROMPTS] [TOKENS] [BENCH FLAGS...] (from the repository
# root): stories15M inflated to a ~1.1B memory-bound target (wspec synth --inflate, hidden 1536,
# 32 heads, intermediate 8192, 22 layers, F16: 2.2 GB) with the shipped drafters inflated for
# it, then `wspec bench --prompts` with each drafter between plain runs. DRAFTERS are modes, and
# draft_model is stories15M itself (6 layers of 288: it predicts its inflation exactly);
# draft_model_2l is the shipped draft model (2 layers of 128), retargeted. The inflated files
# are made once under .wspec/tmp/inflated.
set -euo pipefail
wspec=${1:-./wspec}
drafters=${2:-draft_model,ngram,suffix,eagle3,eagle,medusa}
ks=${3:-1,2,4,8,adaptive}
temps=${4:-0}
prompts=${5:-3}
tokens=${6:-48}
extra=("${@:7}") # more flags for wspec bench, e.g. --one-hot
small=.wspec/models/stories15M
out=.wspec/tmp/inflated
if [ ! -f "$out/model/config.json" ] || [ ! -f "$out/drafters/draft_model/config.json" ]; then
  rm -rf "$out" && mkdir -p "$out"
  "$wspec" synth --inflate "$small" --out "$out/model" --drafters-out "$out/drafters"
fi
for d in ${drafters//,/ }; do
  mode=$d
  case $d in
    draft_model) dm=(--draft-model "$small") ;;
    draft_model_2l) mode=draft_model dm=(--draft-model "$out/drafters/draft_model") ;;
    medusa|eagle|eagle3) dm=(--draft-model "$out/drafters/$d") ;;
    *) dm=() ;;
  esac
  "$wspec" bench --model "$out/model" --prompts spec/distill/prompts/eval.txt --max-prompts "$prompts" \
    --tokens "$tokens" --temperatures "$temps" --ks "$ks" --drafters "$mode" "${dm[@]}" "${extra[@]}" --json "$out/$d.json" 2>&1 |
    grep -v '^[a-z_0-9]* T=[0-9.]*: prompt'
done
