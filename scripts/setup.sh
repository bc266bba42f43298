#!/usr/bin/env bash
# Installs tessera's build dependencies (Debian 12 packages) and builds it.
#   scripts/setup.sh [BUILD_DIR] [extra cmake args...]
set -euo pipefail
cd "$(dirname "$0")/.."

PACKAGES=(
  g++ cmake ninja-build pkg-config
  libyaml-cpp-dev nlohmann-json3-dev libcli11-dev libspdlog-dev libfmt-dev
  libgtest-dev libgmock-dev libbenchmark-dev
  coinor-libcbc-dev
  libtorch-dev libcpp-httplib-dev libboost-dev
  libpcre2-dev libicu-dev # tokenizers: Unicode regular expressions, Unicode normalization
  libgrpc++-dev protobuf-compiler-grpc protobuf-compiler # the gRPC front end
  libprotoc-dev # the export tests load Triton's model_config.proto at run time
  chromium # the report tests open report.html in headless Chromium
  python3-numpy # tests/llm_reference.py: the reference the engine's logits are checked against
  libssl-dev # TLS on the HTTP port (Boost.Asio's ssl stream on OpenSSL)
  openssl # the TLS tests make their certificates with the openssl command
)

missing=()
for p in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "==> installing: ${missing[*]}"
  SUDO=""
  [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing[@]}" >/dev/null
fi

BUILD_DIR="${1:-build}"
shift || true
# npm_package NAME VERSION WHAT: installs an npm package into BUILD_DIR/node when npm is there
# and it is not yet installed; without it, WHAT is skipped.
npm_package() {
  if command -v npm >/dev/null && command -v node >/dev/null &&
    [ ! -f "$BUILD_DIR/node/node_modules/$1/package.json" ]; then
    echo "==> npm: $1@$2 into $BUILD_DIR/node"
    mkdir -p "$BUILD_DIR/node"
    npm install --prefix "$BUILD_DIR/node" --no-audit --no-fund --silent "$1@$2" >/dev/null 2>&1 ||
      echo "    (npm install failed: $3 skipped)"
  fi
}
# The stock `openai` npm client (one package, no dependencies) for the client check
# (tests/openai_client); without it the check is not registered with ctest.
npm_package openai 6.49.0 "the openai client check is"
# `kubernetes-models` (the Kubernetes API's schemas as validators) for the export tests'
# offline manifest validation (tests/k8s_validate.mjs); without it those checks are skipped.
npm_package kubernetes-models 5.1.0 "the manifest schema checks are"
echo "==> configuring $BUILD_DIR"
cmake -S . -B "$BUILD_DIR" -G Ninja "$@" >/dev/null
echo "==> building $BUILD_DIR"
ninja -C "$BUILD_DIR"
