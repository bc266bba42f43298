#!/usr/bin/env bash
# Builds tessera's image (Containerfile) with podman or buildah.
#   scripts/image.sh [--debootstrap] [--tag tessera:dev]
# --debootstrap: no registry needed: makes a Debian 12 root filesystem from Debian's packages
# (debootstrap, as root) and imports it as the base image localhost/debian:12-debootstrap.
set -euo pipefail
cd "$(dirname "$0")/.."
TAG=tessera:dev
BASE=docker.io/library/debian:12
DEBOOTSTRAP=0
while [ $# -gt 0 ]; do
  case "$1" in
    --debootstrap) DEBOOTSTRAP=1 ;;
    --tag) TAG="$2"; shift ;;
    *) echo "usage: $0 [--debootstrap] [--tag NAME:TAG]" >&2; exit 2 ;;
  esac
  shift
done
if command -v podman >/dev/null; then TOOL=podman; elif command -v buildah >/dev/null; then TOOL=buildah
else echo "image.sh: needs podman or buildah (apt-get install podman)" >&2; exit 1; fi
if [ "$DEBOOTSTRAP" = 1 ]; then
  [ "$TOOL" = podman ] || { echo "image.sh: --debootstrap imports with podman" >&2; exit 1; }
  BASE=localhost/debian:12-debootstrap
  if ! podman image exists "$BASE"; then
    ROOTFS=$(mktemp -d)
    trap 'rm -rf "$ROOTFS"' EXIT
    debootstrap --variant=minbase bookworm "$ROOTFS" "${DEBIAN_MIRROR:-http://deb.debian.org/debian}"
    tar -C "$ROOTFS" -c . | podman import - "$BASE"
  fi
fi
if [ "$TOOL" = podman ]; then
  podman build --build-arg BASE="$BASE" -f Containerfile -t "$TAG" .
else
  buildah bud --build-arg BASE="$BASE" -f Containerfile -t "$TAG" .
fi
$TOOL image inspect "$TAG" --format '{{.Size}}' | awk '{printf "image %s: %.0f MB\n", "'"$TAG"'", $1/1e6}'
