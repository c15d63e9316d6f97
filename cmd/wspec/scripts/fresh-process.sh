#!/usr/bin/env bash
# fresh-process.sh BIN MODE N [K [TOKENS]] (from the repository root): for each of the first N
# kept-apart prompts, `wspec generate` plain and with --speculative-mode MODE (adaptive k, up
# to K, 8 by default), TOKENS tokens (64), each a fresh process, alternated (which goes first
# alternates too); prints per-prompt decode tok/s and the median ratio.
set -euo pipefail
bin=$1 mode=$2 n=$3 k=${4:-8} tokens=${5:-64}
i=0
ratios=()
while IFS= read -r p && [ $i -lt "$n" ]; do
  i=$((i+1))
  run() { "$bin" generate --max-tokens "$tokens" "$@" "$p" 2>&1 >/dev/null | sed -n 's/^decode: .*(\([0-9.]*\) tok\/s.*/\1/p'; }
  if [ $((i % 2)) -eq 0 ]; then a=$(run); b=$(run --speculative-mode "$mode" -k "$k"); else b=$(run --speculative-mode "$mode" -k "$k"); a=$(run); fi
  r=$(python3 -c "print(f'{$b/$a:.3f}')")
  ratios+=("$r")
  echo "prompt $i: plain $a tok/s, $mode $b tok/s, ratio $r"
done < spec/distill/prompts/eval.txt
python3 -c "import statistics,sys; r=[float(x) for x in sys.argv[1:]]; print(f'median ratio {statistics.median(r):.3f} over {len(r)} prompts (min {min(r):.3f}, max {max(r):.3f})')" "${ratios[@]}"
