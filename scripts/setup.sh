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
# The stock `openai` npm client (one package, no dependencies) for the client check
# (tests/openai_client): installed into BUILD_DIR/node when npm is there; without it the
# check is not registered with ctest.
OPENAI_NPM_VERSION=6.49.0
if command -v npm >/dev/null && command -v node >/dev/null &&
  [ ! -f "$BUILD_DIR/node/node_modules/openai/package.json" ]; then
  echo "==> npm: openai@$OPENAI_NPM_VERSION into $BUILD_DIR/node"
  mkdir -p "$BUILD_DIR/node"
  npm install --prefix "$BUILD_DIR/node" --no-audit --no-fund --silent \
    "openai@$OPENAI_NPM_VERSION" >/dev/null 2>&1 ||
    echo "    (npm install failed: the openai client check is skipped)"
fi
# `kubernetes-models` (the Kubernetes API's schemas as validators) for the export tests'
# offline manifest validation (tests/k8s_validate.mjs); without it those checks are skipped.
K8S_MODELS_NPM_VERSION=5.1.0
if command -v npm >/dev/null && command -v node >/dev/null &&
  [ ! -f "$BUILD_DIR/node/node_modules/kubernetes-models/package.json" ]; then
  echo "==> npm: kubernetes-models@$K8S_MODELS_NPM_VERSION into $BUILD_DIR/node"
  mkdir -p "$BUILD_DIR/node"
  npm install --prefix "$BUILD_DIR/node" --no-audit --no-fund --silent \
    "kubernetes-models@$K8S_MODELS_NPM_VERSION" >/dev/null 2>&1 ||
    echo "    (npm install failed: the manifest schema checks are skipped)"
fi
echo "==> configuring $BUILD_DIR"
cmake -S . -B "$BUILD_DIR" -G Ninja "$@" >/dev/null
echo "==> building $BUILD_DIR"
ninja -C "$BUILD_DIR"
