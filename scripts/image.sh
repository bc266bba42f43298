#!/usr/bin/env bash
# Builds tessera's image (Containerfile) with podman or buildah.
#   scripts/image.sh [--debootstrap] [--ccache DIR] [--tag tessera:dev]
# --debootstrap: no registry needed: makes a Debian 12 root filesystem from Debian's packages
#   (debootstrap, as root; DEBIAN_MIRROR overrides deb.debian.org) with the sources a
#   debian:12 image has (bookworm, bookworm-updates, bookworm-security), and imports it as the
#   base image localhost/debian:12-debootstrap.
# --ccache DIR: mounts the compiler cache DIR at /ccache in the build stage (build time only;
#   the image does not depend on it).
# PODMAN_BUILD_FLAGS: extra flags for `podman build`, e.g. on a host with cgroup v1 and no
#   CAP_SYS_RESOURCE: "--runtime runc --ulimit nofile=1024:1024 --ulimit nproc=1000:1000".
set -euo pipefail
cd "$(dirname "$0")/.."
TAG=tessera:dev
BASE=docker.io/library/debian:12
DEBOOTSTRAP=0
CCACHE=""
while [ $# -gt 0 ]; do
  case "$1" in
    --debootstrap) DEBOOTSTRAP=1 ;;
    --tag) TAG="$2"; shift ;;
    --ccache) CCACHE="$2"; shift ;;
    *) echo "usage: $0 [--debootstrap] [--ccache DIR] [--tag NAME:TAG]" >&2; exit 2 ;;
  esac
  shift
done
if command -v podman >/dev/null; then TOOL=podman; elif command -v buildah >/dev/null; then TOOL=buildah
else echo "image.sh: needs podman or buildah (apt-get install podman)" >&2; exit 1; fi
if [ "$DEBOOTSTRAP" = 1 ]; then
  [ "$TOOL" = podman ] || { echo "image.sh: --debootstrap imports with podman" >&2; exit 1; }
  BASE=localhost/debian:12-debootstrap
  if ! podman image exists "$BASE"; then
    MIRROR="${DEBIAN_MIRROR:-http://deb.debian.org/debian}"
    ROOTFS=$(mktemp -d)
    trap 'rm -rf "$ROOTFS"' EXIT
    debootstrap --variant=minbase bookworm "$ROOTFS" "$MIRROR"
    cat > "$ROOTFS/etc/apt/sources.list" <<SOURCES
deb $MIRROR bookworm main
deb $MIRROR bookworm-updates main
deb ${DEBIAN_SECURITY_MIRROR:-http://deb.debian.org/debian-security} bookworm-security main
SOURCES
    rm -rf "$ROOTFS"/var/cache/apt/archives/*.deb "$ROOTFS"/var/lib/apt/lists/*
    tar -C "$ROOTFS" -c . | podman import - "$BASE"
  fi
fi
FLAGS=(--build-arg "BASE=$BASE" -f Containerfile -t "$TAG")
[ -n "$CCACHE" ] && FLAGS+=(-v "$(realpath "$CCACHE"):/ccache")
# shellcheck disable=SC2206 # PODMAN_BUILD_FLAGS is a list of flags
EXTRA=(${PODMAN_BUILD_FLAGS:-})
if [ "$TOOL" = podman ]; then
  podman build "${EXTRA[@]}" "${FLAGS[@]}" .
else
  buildah bud "${EXTRA[@]}" "${FLAGS[@]}" .
fi
$TOOL image inspect "$TAG" --format '{{.Size}}' | awk '{printf "image %s: %.0f MB\n", "'"$TAG"'", $1/1e6}'
