# Sourced by the LLM results scripts (not run): serves $OUT/run.yaml's LLM with
# `tessera-torch serve` on $PORT and replays its workload with `tessera loadgen`.
#   llm_serve_replay LOG LIVE_DIR METRICS [serve flags...]
# LOG: the server's output; LIVE_DIR: loadgen's --out; METRICS: the server's /metrics after
# the replay. Needs T (tessera), TT (tessera-torch), OUT (holds run.yaml and model/), PORT.
llm_serve_replay() {
  local log=$1 live=$2 metrics=$3
  shift 3
  "$TT" serve "$OUT/run.yaml" --llm-checkpoint "$OUT/model" --port "$PORT" \
    --max-inflight 1000 "$@" > "$log" 2>&1 &
  local server=$!
  trap "kill -INT $server 2>/dev/null || true" EXIT
  for _ in $(seq 1 600); do
    curl -sf "http://127.0.0.1:$PORT/v2/health/ready" >/dev/null && break
    sleep 0.1
  done
  "$T" loadgen "$OUT/run.yaml" --url "http://127.0.0.1:$PORT" --out "$live" --quiet \
    --connections 64 --timeout 600 >/dev/null
  curl -sf "http://127.0.0.1:$PORT/metrics" > "$metrics"
  kill -INT $server
  wait $server || true
  trap - EXIT
}
