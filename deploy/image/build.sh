#!/usr/bin/env bash
# deploy/image/build.sh OUT.tar: builds wspec's container image from Debian packages and this
# repository alone (no base image is pulled from a registry) and writes it as an OCI image
# archive (an OCI layout in a tar: `podman load -i OUT.tar`, `skopeo copy oci-archive:OUT.tar
# docker://REGISTRY/wspec:TAG`, or containerd's `ctr image import`).
#
#   1. debootstrap --variant=minbase bookworm, then Mesa's Vulkan drivers (lavapipe and the GPU
#      drivers) and the Vulkan loader from bookworm-backports, as setup.sh installs them, and
#      ca-certificates;
#   2. the wspec binary (built here with -trimpath) and Dawn's library (.wspec/lib, fetched by
#      ./setup.sh; fetched now when absent) under /usr/local;
#   3. a user wspec (uid 10001) that the image runs as; HOME /home/wspec, where Mesa keeps its
#      shader cache;
#   4. umoci packs the folder as one layer and writes the image's configuration: entrypoint
#      `wspec serve --host 0.0.0.0 --port 8000`, WSPEC_HOME=/var/lib/wspec (mount the models there:
#      the default model is models/stories15M in it; or pass --model /path/in/a/volume).
#
# No secret is baked in: the API key comes at run time from $WSPEC_API_KEY or --api-key.
# Needs root (debootstrap, chroot), debootstrap, umoci and Go. Environment: MIRROR (a Debian
# mirror, default http://deb.debian.org/debian), DEB_CACHE (a folder kept between builds for
# the downloaded .debs), WSPEC_BIN (a wspec binary to use instead of building one).
set -euo pipefail
[ $# -eq 1 ] || { echo "usage: $0 OUT.tar" >&2; exit 2; }
out=$(realpath -m "$1")
[ -e "$out" ] && { echo "build.sh: $out exists; remove it or name another" >&2; exit 1; }
[ "$(id -u)" = 0 ] || { echo "build.sh: needs root (debootstrap and chroot)" >&2; exit 1; }
for t in debootstrap umoci go; do
  command -v "$t" >/dev/null || { echo "build.sh: $t is needed (apt-get install debootstrap umoci; Go from go.dev)" >&2; exit 1; }
done
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
mirror=${MIRROR:-http://deb.debian.org/debian}
work=$(mktemp -d)
root="$work/rootfs"
cleanup() {
  for m in proc dev; do mountpoint -q "$root/$m" && umount -l "$root/$m"; done
  rm -rf "$work"
}
trap cleanup EXIT

# ---- 1. the root file system ---------------------------------------------------------
cache=()
if [ -n "${DEB_CACHE:-}" ]; then mkdir -p "$DEB_CACHE"; cache=(--cache-dir="$(realpath "$DEB_CACHE")"); fi
echo "build.sh: debootstrap bookworm from $mirror"
debootstrap --variant=minbase --include=ca-certificates "${cache[@]}" bookworm "$root" "$mirror" >"$work/debootstrap.log" 2>&1 ||
  { tail -20 "$work/debootstrap.log" >&2; exit 1; }
printf 'Types: deb\nURIs: %s\nSuites: bookworm-backports\nComponents: main\nSigned-By: /usr/share/keyrings/debian-archive-keyring.gpg\n' \
  "$mirror" >"$root/etc/apt/sources.list.d/backports.sources"
cp /etc/resolv.conf "$root/etc/resolv.conf"
mount -t proc proc "$root/proc"
mount --bind /dev "$root/dev"
in_root() { chroot "$root" env DEBIAN_FRONTEND=noninteractive LC_ALL=C "$@"; }
echo "build.sh: Mesa's Vulkan drivers from bookworm-backports"
in_root apt-get update -qq
in_root apt-get install -y -qq --no-install-recommends -t bookworm-backports mesa-vulkan-drivers libvulkan1 >"$work/apt.log" 2>&1 ||
  { tail -20 "$work/apt.log" >&2; exit 1; }
in_root useradd --uid 10001 --user-group --create-home --home-dir /home/wspec --shell /usr/sbin/nologin wspec
mkdir -p "$root/var/lib/wspec/models"
chown -R 10001:10001 "$root/var/lib/wspec"
in_root apt-get clean
umount -l "$root/proc" "$root/dev"
# what a running server never reads: package lists, docs, the resolver file of this machine
rm -rf "$root"/var/lib/apt/lists/* "$root"/var/cache/apt/*.bin "$root"/usr/share/doc/* \
  "$root"/usr/share/man/* "$root"/usr/share/info/* "$root"/var/log/*.log
: >"$root/etc/resolv.conf"

# ---- 2. wspec and Dawn ------------------------------------------------------------------
mkdir -p "$root/usr/local/bin" "$root/usr/local/lib/wspec"
if [ -n "${WSPEC_BIN:-}" ]; then
  install -m 0755 "$WSPEC_BIN" "$root/usr/local/bin/wspec"
else
  echo "build.sh: go build ./cmd/wspec"
  (cd "$repo" && go build -trimpath -o "$root/usr/local/bin/wspec" ./cmd/wspec)
fi
dawn="$repo/.wspec/lib/libwebgpu_wrapper.so"
if [ ! -f "$dawn" ]; then
  echo "build.sh: fetching Dawn (wspec setup --skip-model)"
  (cd "$repo" && go run ./cmd/wspec setup --skip-model --dir "$work/home" >/dev/null)
  dawn="$work/home/lib/libwebgpu_wrapper.so"
fi
install -m 0644 "$dawn" "$root/usr/local/lib/wspec/libwebgpu_wrapper.so"

# ---- 3. pack: one layer, the configuration ------------------------------------------------
layout="$work/oci"
umoci init --layout "$layout"
umoci new --image "$layout:wspec"
umoci unpack --image "$layout:wspec" "$work/bundle" >/dev/null
rmdir "$work/bundle/rootfs" && mv "$root" "$work/bundle/rootfs"
umoci repack --image "$layout:wspec" "$work/bundle"
version=$(cd "$repo" && git describe --always --dirty 2>/dev/null || echo unknown)
umoci config --image "$layout:wspec" \
  --author "wspec deploy/image/build.sh" \
  --config.user 10001:10001 \
  --config.workingdir /home/wspec \
  --config.env PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
  --config.env HOME=/home/wspec \
  --config.env WSPEC_HOME=/var/lib/wspec \
  --config.env WSPEC_WEBGPU_LIB=/usr/local/lib/wspec/libwebgpu_wrapper.so \
  --config.entrypoint /usr/local/bin/wspec \
  --config.cmd serve --config.cmd --host --config.cmd 0.0.0.0 --config.cmd --port --config.cmd 8000 \
  --config.exposedports 8000/tcp \
  --config.volume /var/lib/wspec \
  --config.label org.opencontainers.image.title=wspec \
  --config.label org.opencontainers.image.revision="$version" \
  --manifest.annotation org.opencontainers.image.ref.name=wspec
umoci gc --layout "$layout"
tar -C "$layout" -cf "$out" .
echo "build.sh: wrote $out ($(du -h "$out" | cut -f1), revision $version)"
