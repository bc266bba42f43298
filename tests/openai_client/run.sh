#!/usr/bin/env bash
# The openai npm client check (docs/llm-serve.md#checked-with-the-openai-client): writes a
# tiny random checkpoint, serves it with `tessera serve`, runs check.mjs against it with the
# stock `openai` package, and stops the server.
#   tests/openai_client/run.sh TESSERA_BINARY OPENAI_PACKAGE_DIR [WORK_DIR]
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
tessera="$(cd "$(dirname "$1")" && pwd)/$(basename "$1")"
package="$(cd "$2" && pwd)"
work="${3:-$(mktemp -d)}"
mkdir -p "$work"
"$tessera" llm random-checkpoint "$root/data/llm/llama-2-7b" --out "$work/ckpt" --layers 2 \
  --hidden 64 --heads 4 --kv-heads 2 --ffn 128 --vocab 260 --dtype F32 --seed 1 >/dev/null
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
"$tessera" serve "$root/examples/llm-serve/run.yaml" --llm-checkpoint "$work/ckpt" \
  --port "$port" >"$work/server.log" 2>&1 &
server=$!
trap 'kill "$server" 2>/dev/null || true; wait "$server" 2>/dev/null || true' EXIT
for _ in $(seq 1 600); do
  if curl -sf "http://127.0.0.1:$port/v2/health/ready" >/dev/null 2>&1; then break; fi
  if ! kill -0 "$server" 2>/dev/null; then cat "$work/server.log"; exit 1; fi
  sleep 0.1
done
node "$here/check.mjs" "http://127.0.0.1:$port" "$package"
