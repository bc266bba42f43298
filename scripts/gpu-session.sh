#!/usr/bin/env bash
# One session on a GPU machine that has a CUDA PyTorch (pip) but none of tessera's Debian
# dependencies and no network (docs/serve.md#serving-on-gpus):
#   1. unpacks the dependency prefix that scripts/gpu-prefix.sh made from Debian 12's
#      packages (PREFIX_TAR, default .devdeps/prefix.tar.xz) into /tmp/tessera-deps;
#   2. builds tessera and tessera-torch against the machine's libtorch with the CUDA path
#      (build-cuda, TESSERA_CUDA=ON);
#   3. runs scripts/gpu-llm.sh (the LLM decoder on the GPU) and scripts/gpu-results.sh (DNN
#      serving on the GPU), each under its own time limit, going on when one fails;
#   4. packs what they wrote into RESULTS (default out/gpu-session.tar.gz).
#   scripts/gpu-session.sh [DEVICE]   (default cuda)
# Environment: BUILD_LIMIT, LLM_LIMIT, DNN_LIMIT (seconds per step; defaults 300, 200, 150).
set -uo pipefail
cd "$(dirname "$0")/.."
DEVICE="${1:-cuda}"
PREFIX_TAR=${PREFIX_TAR:-.devdeps/prefix.tar.xz}
RESULTS=${RESULTS:-out/gpu-session.tar.gz}
DEPS=/tmp/tessera-deps
mkdir -p out
log() { echo "gpu-session $(date -u +%H:%M:%S): $*"; }

log "machine"
nvidia-smi -L
nvidia-smi --query-gpu=name,memory.total,driver_version,mig.mode.current --format=csv,noheader
grep PRETTY_NAME /etc/os-release
c++ --version | head -1
cmake --version | head -1
nproc
python3 -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda,
  "cxx11 abi", torch._C._GLIBCXX_USE_CXX11_ABI, "available", torch.cuda.is_available())'
TORCH_PREFIX=$(python3 -c 'import torch; print(torch.utils.cmake_prefix_path)')

log "1. dependencies from $PREFIX_TAR"
rm -rf "$DEPS" && mkdir -p "$DEPS" && tar -C "$DEPS" -xJf "$PREFIX_TAR" || exit 1
L=$DEPS/usr/lib/x86_64-linux-gnu
# What Debian's maintainer scripts and alternatives would have linked.
mv "$DEPS"/lib/x86_64-linux-gnu/* "$L"/ 2> /dev/null || true
ln -sf libbz2.so.1.0 "$L/libbz2.so"
ln -sf libz.so.1 "$L/libz.so"
ln -sf blas/libblas.so.3 "$L/libblas.so.3" && ln -sf libblas.so.3 "$L/libblas.so"
ln -sf lapack/liblapack.so.3 "$L/liblapack.so.3" && ln -sf liblapack.so.3 "$L/liblapack.so"
export LD_LIBRARY_PATH=$L${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export PKG_CONFIG_LIBDIR=$L/pkgconfig:$DEPS/usr/share/pkgconfig
export PKG_CONFIG_SYSROOT_DIR=$DEPS
export PATH=$DEPS/usr/bin:$PATH:/usr/local/cuda/bin

log "2. build (libtorch at $TORCH_PREFIX)"
timeout "${BUILD_LIMIT:-300}" bash -c "
  cmake -S . -B build-cuda -G Ninja -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_PREFIX_PATH='$TORCH_PREFIX;$DEPS/usr' -DPKG_CONFIG_EXECUTABLE=$DEPS/usr/bin/pkgconf \
    -DTESSERA_CUDA=ON -DTESSERA_BUILD_TESTS=OFF -DTESSERA_BUILD_BENCH=OFF > out/gpu-cmake.log 2>&1 ||
    { tail -40 out/gpu-cmake.log; exit 1; }
  ninja -C build-cuda -k 0 -j \$(nproc) tessera tessera-torch > out/gpu-build.log 2>&1 ||
    { grep -E 'error|FAILED' out/gpu-build.log | sort -u | head -40; tail -5 out/gpu-build.log; exit 1; }"
BUILD=$?
log "build exit $BUILD"
if [ $BUILD -eq 0 ]; then
  ldd build-cuda/tessera-torch | grep -E 'not found|cuda|c10' | head
  log "3a. LLM decoder"
  TESSERA_TORCH=build-cuda/tessera-torch timeout "${LLM_LIMIT:-200}" scripts/gpu-llm.sh "$DEVICE"
  log "LLM exit $?"
  log "3b. DNN serving"
  TESSERA_BUILD_DIR=build-cuda timeout "${DNN_LIMIT:-150}" scripts/gpu-results.sh "$DEVICE"
  log "DNN exit $?"
fi
log "4. results"
tar -czf "$RESULTS" --exclude='*.safetensors' out/gpu-cmake.log out/gpu-build.log \
  out/gpu-results out/gpu-serve out/gpu-llm docs/results/serve.md docs/results/iserve/gpu.md \
  2> /dev/null
ls -la "$RESULTS"
