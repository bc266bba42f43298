#!/usr/bin/env bash
# Sets everything up and runs tessera's main job on its bundled default example: the
# traffic-analysis pipeline simulated on the Azure LLM 2023 code trace.
set -euo pipefail
cd "$(dirname "$0")/.."
T=$(scripts/release-build.sh)
"$T" simulate examples/traffic/run.yaml --out out/traffic
echo "==> open out/traffic/timeseries.svg in a browser for the time series"
