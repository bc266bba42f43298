#!/usr/bin/env bash
# Makes the dependency prefix that scripts/gpu-session.sh builds tessera with on a GPU
# machine that has a CUDA PyTorch but no network and none of tessera's Debian packages:
# Debian 12's .deb files of every library tessera links besides libtorch (and what they
# need that such a machine may lack), unpacked with dpkg -x, without docs, man pages and
# static libraries, packed into one archive that travels with the working tree.
#   scripts/gpu-prefix.sh [ARCHIVE]   (default .devdeps/prefix.tar.xz; about 35 MB)
# Run it on a Debian 12 machine with apt (as setup.sh's machine is).
set -euo pipefail
cd "$(dirname "$0")/.."
ARCHIVE=${1:-.devdeps/prefix.tar.xz}
PACKAGES=(
  # CBC and what it links
  coinor-libcbc-dev coinor-libcbc3 coinor-libcgl-dev coinor-libcgl1 coinor-libclp-dev
  coinor-libclp1 coinor-libcoinutils-dev coinor-libcoinutils3v5 coinor-libosi-dev
  coinor-libosi1v5 libblas3 liblapack3 libgfortran5 libquadmath0 libbz2-dev libbz2-1.0
  zlib1g zlib1g-dev
  # HTTP, gRPC and protobuf (with the code generators), Boost.Beast
  libcpp-httplib-dev libcpp-httplib0.11 libbrotli1 libbrotli-dev libssl3 libssl-dev
  libgrpc++-dev libgrpc-dev libgrpc29 libgrpc++1.51 libprotobuf-dev libprotobuf32 libprotoc32
  libprotobuf-lite32 protobuf-compiler protobuf-compiler-grpc libabsl-dev libabsl20220623
  libre2-9 libre2-dev libc-ares2 libc-ares-dev libsystemd-dev libboost1.74-dev libboost-dev
  # configuration, logging, CLI, JSON, tokenizers
  libspdlog-dev libspdlog1.10 libfmt-dev libfmt9 libyaml-cpp-dev libyaml-cpp0.7
  nlohmann-json3-dev libcli11-dev libicu72 libicu-dev libpcre2-8-0 libpcre2-dev libpcre2-16-0
  libpcre2-32-0 libpcre2-posix3
  # pkg-config itself
  pkgconf pkgconf-bin libpkgconf3
)
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
(cd "$WORK" && apt-get download "${PACKAGES[@]}" > /dev/null)
mkdir -p "$WORK/prefix"
for f in "$WORK"/*.deb; do dpkg -x "$f" "$WORK/prefix"; done
rm -rf "$WORK"/prefix/usr/share/{doc,man,lintian}
find "$WORK/prefix" -name '*.a' -delete
mkdir -p "$(dirname "$ARCHIVE")"
tar -C "$WORK/prefix" -cJf "$ARCHIVE" .
echo "gpu-prefix: wrote $ARCHIVE ($(du -h "$ARCHIVE" | cut -f1), ${#PACKAGES[@]} packages)"
