#!/usr/bin/env bash
# The openai npm client check (docs/llm-serve.md#checked-with-the-openai-client): writes a
# tiny random checkpoint, serves it with `tessera serve`, runs check.mjs against it with the
# stock `openai` package, and stops the server. With `gateway`, two such servers run as
# backends and check.mjs talks to `tessera serve` as the LLM gateway in front of them
# (docs/llm-gateway.md), so the client sees what the gateway relays.
#   tests/openai_client/run.sh TESSERA_BINARY OPENAI_PACKAGE_DIR [WORK_DIR] [gateway]
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
tessera="$(cd "$(dirname "$1")" && pwd)/$(basename "$1")"
package="$(cd "$2" && pwd)"
work="${3:-$(mktemp -d)}"
mode="${4:-direct}"
mkdir -p "$work"
"$tessera" llm random-checkpoint "$root/data/llm/llama-2-7b" --out "$work/ckpt" --layers 2 \
  --hidden 64 --heads 4 --kv-heads 2 --ffn 128 --vocab 260 --dtype F32 --seed 1 >/dev/null

free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}
servers=()
stop_servers() {
  for pid in "${servers[@]}"; do kill "$pid" 2>/dev/null || true; done
  for pid in "${servers[@]}"; do wait "$pid" 2>/dev/null || true; done
}
trap stop_servers EXIT
# start NAME PORT ARGS...: runs `tessera serve ARGS --port PORT` and waits until it is ready
# (HEALTH_PATH answers 200), or prints its log and fails if it exits first.
start() {
  local name="$1" port="$2" health="$3"
  shift 3
  "$tessera" serve "$@" --port "$port" >"$work/$name.log" 2>&1 &
  servers+=($!)
  local pid=$!
  for _ in $(seq 1 600); do
    if curl -sf "http://127.0.0.1:$port$health" >/dev/null 2>&1; then return 0; fi
    if ! kill -0 "$pid" 2>/dev/null; then cat "$work/$name.log"; return 1; fi
    sleep 0.1
  done
  echo "$name did not become ready on port $port" >&2
  cat "$work/$name.log"
  return 1
}

port=$(free_port)
if [ "$mode" = gateway ]; then
  backend_a=$(free_port)
  backend_b=$(free_port)
  start backend-a "$backend_a" /v2/health/ready "$root/examples/llm-serve/run.yaml" \
    --llm-checkpoint "$work/ckpt"
  start backend-b "$backend_b" /v2/health/ready "$root/examples/llm-serve/run.yaml" \
    --llm-checkpoint "$work/ckpt"
  # The bundled gateway example, its relative paths made absolute and its backends pointed
  # at the two servers above.
  sed -e "s|\.\./llm-serve/|$root/examples/llm-serve/|g" \
    -e "s|http://127.0.0.1:19201|http://127.0.0.1:$backend_a|" \
    -e "s|http://127.0.0.1:19202|http://127.0.0.1:$backend_b|" \
    "$root/examples/llm-gateway/gateway.yaml" >"$work/gateway.yaml"
  start gateway "$port" /health "$work/gateway.yaml"
else
  start server "$port" /v2/health/ready "$root/examples/llm-serve/run.yaml" \
    --llm-checkpoint "$work/ckpt"
fi
node "$here/check.mjs" "http://127.0.0.1:$port" "$package"
