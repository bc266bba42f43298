#!/usr/bin/env bash
# Sets everything up and runs tessera's main job on its bundled default example: the
# traffic-analysis pipeline simulated on the Azure LLM 2023 code trace.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh build-release -DCMAKE_BUILD_TYPE=Release -DTESSERA_BUILD_TESTS=OFF -DTESSERA_BUILD_BENCH=OFF
build-release/tessera simulate examples/traffic/run.yaml --out out/traffic
echo "==> open out/traffic/timeseries.svg in a browser for the time series"
