#!/usr/bin/env bash
# Regenerates docs/results/llm-openai.md: the OpenAI semantics of the live LLM server checked
# from outside. (1) The stock `openai` npm client's request shapes (tests/openai_client);
# (2) sampling reproducibility: the same seeded request (temperature 1, top_p 0.9) sent
# one at a time and all at once (so that it is batched with different neighbours in each
# step), the same unseeded request, and greedy requests, counting distinct answers.
#   scripts/llm-openai-results.sh                      (about a minute on 2 cores)
#   TESSERA=build/tessera OPENAI=build/node/node_modules/openai scripts/llm-openai-results.sh
set -euo pipefail
cd "$(dirname "$0")/.."
T=${TESSERA:-build/tessera}
PKG=${OPENAI:-build/node/node_modules/openai}
OUT=out/llm-openai
DOC=docs/results/llm-openai.md
mkdir -p "$OUT"
[ -f "$PKG/package.json" ] || { echo "no openai package at $PKG (scripts/setup.sh installs it)"; exit 1; }

echo "==> openai client check" >&2
tests/openai_client/run.sh "$T" "$PKG" "$OUT/client" | tee "$OUT/client.txt" >&2

echo "==> sampling reproducibility" >&2
"$T" llm random-checkpoint data/llm/llama-2-7b --out "$OUT/model" --layers 2 --hidden 64 \
  --heads 4 --kv-heads 2 --ffn 128 --vocab 260 --dtype F32 --seed 1 >/dev/null
PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
"$T" serve examples/llm-serve/run.yaml --llm-checkpoint "$OUT/model" --port "$PORT" \
  >"$OUT/server.log" 2>&1 &
SERVER=$!
trap 'kill "$SERVER" 2>/dev/null || true; wait "$SERVER" 2>/dev/null || true' EXIT
for _ in $(seq 1 600); do
  curl -sf "http://127.0.0.1:$PORT/v2/health/ready" >/dev/null 2>&1 && break
  sleep 0.1
done
python3 - "$PORT" "$OUT/repro.json" <<'PY'
import json, sys, urllib.request
from concurrent.futures import ThreadPoolExecutor
port, out = sys.argv[1], sys.argv[2]
def post(body):
    req = urllib.request.Request(f"http://127.0.0.1:{port}/v1/completions",
                                 data=json.dumps(body).encode(),
                                 headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=300) as r:
        return json.load(r)["choices"][0]["text"]
base = {"prompt": "def fibonacci(n):", "max_tokens": 32, "ignore_eos": True}
seeded = dict(base, temperature=1.0, top_p=0.9, seed=1234)
unseeded = dict(base, temperature=1.0, top_p=0.9)
greedy = dict(base, temperature=0)
K = 10
rows = []
def serial(body):
    return [post(body) for _ in range(K)]
def concurrent(body):
    # Each request in a batch with different neighbours: K of them plus other prompts.
    others = [dict(base, prompt="x" * (7 * i + 3), temperature=1.0) for i in range(K)]
    with ThreadPoolExecutor(2 * K) as pool:
        futures = [pool.submit(post, body) for _ in range(K)]
        [pool.submit(post, o) for o in others]
        return [f.result() for f in futures]
for name, body, how in [("seed 1234, temperature 1, top_p 0.9", seeded, "one at a time"),
                        ("seed 1234, temperature 1, top_p 0.9", seeded, "all at once"),
                        ("no seed, temperature 1, top_p 0.9", unseeded, "one at a time"),
                        ("temperature 0 (greedy)", greedy, "all at once")]:
    texts = serial(body) if how == "one at a time" else concurrent(body)
    rows.append({"request": name, "sent": how, "requests": K, "distinct": len(set(texts))})
json.dump(rows, open(out, "w"), indent=1)
PY

python3 - "$OUT" "$DOC" <<'PY'
import json, sys, platform, subprocess
out, doc = sys.argv[1], sys.argv[2]
rows = json.load(open(f"{out}/repro.json"))
client = open(f"{out}/client.txt").read().strip()
cpu = subprocess.run(["sh", "-c", "lscpu | sed -n 's/^Model name: *//p'"], capture_output=True,
                     text=True).stdout.strip()
lines = ["# OpenAI semantics of the live LLM server, checked from outside", "",
         "Written by `scripts/llm-openai-results.sh` (a tiny random-weight Llama-shaped model, "
         "`examples/llm-serve/run.yaml`, on " + (cpu or platform.machine()) + "). The "
         "fields and their meaning: [llm-serve.md](../llm-serve.md#endpoints).", "",
         "## The stock `openai` npm client", "",
         "`tests/openai_client/check.mjs` (also run by ctest as `openai_npm_client_check`):", "",
         "```", client, "```", "",
         "## Sampling reproducibility", "",
         "The same `/v1/completions` request (prompt `def fibonacci(n):`, 32 tokens, "
         "`ignore_eos`) sent 10 times, one at a time or all at once together with 10 other "
         "requests (each step batches it with different neighbours):", "",
         "| request | sent | requests | distinct answers |", "|---|---|---|---|"]
for r in rows:
    lines.append(f"| {r['request']} | {r['sent']} | {r['requests']} | {r['distinct']} |")
seeded = [r["distinct"] for r in rows if r["request"].startswith("seed")]
if all(d == 1 for d in seeded):
    lines += ["", "A seed gives the same answer whether a request is served alone or batched "
              "(one distinct answer in both seeded rows): each request samples from its own "
              "generator, seeded by `seed` (choice *i* by `seed + i`), and the batched forward "
              "pass computes each request's logits independently of its neighbours. Without a "
              f"seed each request draws its own seed ({rows[2]['distinct']} distinct answers "
              "of 10).", ""]
else:
    lines += ["", f"**A seed did not reproduce its answer**: {seeded} distinct answers in the "
              "seeded rows.", ""]
open(doc, "w").write("\n".join(lines))
print("wrote", doc)
PY
