#!/usr/bin/env python3
"""The LLM gateway's fault test (docs/llm-gateway.md, "Faults"): three `tessera serve` LLM
servers as backend processes behind `tessera serve` as the gateway; while nine streams are
being answered one backend is killed (SIGKILL) and one stopped (SIGSTOP). Checks that
nothing is lost and nothing is answered twice:

- every client gets exactly one answer: a stream ends with exactly one `data: [DONE]` and
  nothing after it; a stream whose backend died after its first token carries exactly one
  error event before it; whole answers are 200 (retried elsewhere when their backend is
  stopped before the first token);
- the gateway's ledger (`tessera_gateway_requests_total`) counts every request sent exactly
  once, and its ok/failed counts equal what the clients saw;
- the stopped backend is taken out of service and comes back after SIGCONT, when a health
  check passes; the requests sent after that are served.

No sleeps stand in for events: every step waits on an observable state (a client's first
token, the gateway's /metrics), each under a deadline that fails the test.

Usage: fault_test.py TESSERA_BINARY WORK_DIR
"""
import http.client
import json
import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time

TESSERA, WORK = sys.argv[1], sys.argv[2]
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DEADLINE_S = 60
os.makedirs(WORK, exist_ok=True)
processes = []


def fail(message):
    print("FAIL:", message)
    for p in processes:
        try:
            p.send_signal(signal.SIGCONT)
            p.kill()
        except ProcessLookupError:
            pass
    sys.exit(1)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for(what, predicate, timeout_s=DEADLINE_S):
    end = time.monotonic() + timeout_s
    while time.monotonic() < end:
        if predicate():
            return
        time.sleep(0.02)  # polling an observable state, not waiting for it to happen
    fail(f"timed out waiting for {what}")


def get(port, path):
    try:
        c = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
        c.request("GET", path)
        r = c.getresponse()
        return r.status, r.read().decode("utf-8", "replace")
    except OSError:
        return None, ""


def start(name, port, health, *args):
    log = open(os.path.join(WORK, name + ".log"), "w")
    p = subprocess.Popen([TESSERA, "serve", *args, "--port", str(port)], stdout=log,
                         stderr=subprocess.STDOUT)
    processes.append(p)
    wait_for(f"{name} ready", lambda: p.poll() is None and get(port, health)[0] == 200)
    return p


def metric(text, name, labels=""):
    m = re.search(r"^" + re.escape(name + labels) + r" (\S+)$", text, re.M)
    return float(m.group(1)) if m else None


subprocess.run([TESSERA, "llm", "random-checkpoint", f"{ROOT}/data/llm/llama-2-7b", "--out",
                f"{WORK}/ckpt", "--layers", "2", "--hidden", "64", "--heads", "4",
                "--kv-heads", "2", "--ffn", "128", "--vocab", "260", "--dtype", "F32", "--seed",
                "1"], check=True, stdout=subprocess.DEVNULL)
ports = [free_port() for _ in range(3)]
backends = [start(f"backend-{i}", port, "/v2/health/ready", f"{ROOT}/examples/llm-serve/run.yaml",
                  "--llm-checkpoint", f"{WORK}/ckpt") for i, port in enumerate(ports)]
urls = [f"http://127.0.0.1:{p}" for p in ports]
with open(f"{ROOT}/examples/llm-gateway/gateway.yaml") as f:
    spec = f.read().split("  backends:")[0].replace("../llm-serve/", f"{ROOT}/examples/llm-serve/")
spec += "  backends:\n" + "".join(f'    - {{url: "{u}"}}\n' for u in urls)
# A stopped backend is silent: 4 s of silence fails it; health checks every 0.2 s, with
# room for a loaded machine (the sanitizer build) to answer them.
spec += ("  gateway: {routing: round_robin, timeout_ms: 4000, retries: 1,\n"
         "            health_interval_ms: 200, health_timeout_ms: 2000}\n")
with open(f"{WORK}/gateway.yaml", "w") as f:
    f.write(spec)
gateway_port = free_port()
start("gateway", gateway_port, "/health", f"{WORK}/gateway.yaml")

outcomes = []  # one entry per request: what its client saw
lock = threading.Lock()


def completion(stream, max_tokens, first_token=None):
    body = json.dumps({"prompt": "hello", "max_tokens": max_tokens, "stream": stream,
                       "ignore_eos": True})
    seen = {"stream": stream, "status": None, "done": 0, "errors": 0, "tokens": 0,
            "after_done": 0}
    try:
        c = http.client.HTTPConnection("127.0.0.1", gateway_port, timeout=30)
        c.request("POST", "/v1/completions", body, {"Content-Type": "application/json"})
        r = c.getresponse()
        seen["status"] = r.status
        if not stream or r.status != 200:
            r.read()
        else:
            for raw in r:
                line = raw.decode("utf-8", "replace").strip()
                if not line.startswith("data:"):
                    continue
                data = line[5:].strip()
                if seen["done"]:
                    seen["after_done"] += 1
                elif data == "[DONE]":
                    seen["done"] += 1
                elif '"error"' in data and "choices" not in data:
                    seen["errors"] += 1
                else:
                    seen["tokens"] += 1
                    if seen["tokens"] == 1 and first_token:
                        first_token.set()
    except OSError as e:
        seen["exception"] = str(e)
    with lock:
        outcomes.append(seen)


def run_all(threads):
    for t in threads:
        t.start()
    for t in threads:
        t.join(DEADLINE_S)
        if t.is_alive():
            fail("a client never got its answer")


# Phase 1: nine streams, three per backend; once every one has its first token, backend 0 is
# killed and backend 1 stopped.
firsts = [threading.Event() for _ in range(9)]
streams = [threading.Thread(target=completion, args=(True, 1500, e)) for e in firsts]
for t in streams:
    t.start()
for e in firsts:
    if not e.wait(DEADLINE_S):
        fail("a stream never got its first token")
backends[0].kill()
backends[1].send_signal(signal.SIGSTOP)
for t in streams:
    t.join(DEADLINE_S)
    if t.is_alive():
        fail("a stream never ended")

# Phase 2: whole answers while backend 1 is still stopped: each is served, retried on
# backend 2 if it was sent to the stopped one.
run_all([threading.Thread(target=completion, args=(False, 8)) for _ in range(6)])
up = lambda u: metric(get(gateway_port, "/metrics")[1], "tessera_gateway_backend_up",
                      f'{{backend="{u}"}}')
wait_for("the stopped backend out of service", lambda: up(urls[1]) == 0)
if up(urls[0]) != 0:
    fail("the killed backend is still in service")

# Phase 3: the stopped backend continues, passes a health check and serves again.
backends[1].send_signal(signal.SIGCONT)
wait_for("the continued backend back in service", lambda: up(urls[1]) == 1)
run_all([threading.Thread(target=completion, args=(False, 8)) for _ in range(4)])

text = get(gateway_port, "/metrics")[1]
ledger = {o: metric(text, "tessera_gateway_requests_total", f'{{outcome="{o}"}}') or 0
          for o in ("ok", "late", "shed", "failed", "cancelled")}
for p in processes:
    if p is not backends[0]:
        p.terminate()
        if p.wait(30) != 0:  # a sanitizer's report, or a crash at shutdown
            fail(f"{' '.join(p.args[:3])} exited {p.returncode}; its log is in {WORK}")

sent = 9 + 6 + 4
print(f"ledger {ledger}")
print(f"streams {[(o['tokens'], o['errors'], o['done']) for o in outcomes if o['stream']]}")
if len(outcomes) != sent:
    fail(f"{len(outcomes)} clients answered of {sent}")
broken = [o for o in outcomes if o["stream"] and o["errors"]]
for o in outcomes:
    if "exception" in o or o["status"] != 200:
        fail(f"a client got no clean answer: {o}")
    if o["stream"] and (o["done"] != 1 or o["after_done"] or o["errors"] > 1 or not o["tokens"]):
        fail(f"a stream was not answered exactly once: {o}")
if not broken:
    fail("no stream ended with an error event, so no backend failed mid-stream")
if len(broken) > 6:
    fail(f"{len(broken)} streams broke; only the killed and the stopped backends' six may")
if sum(ledger.values()) != sent:
    fail(f"the ledger counts {sum(ledger.values())} requests, {sent} were sent")
if ledger["failed"] != len(broken) or ledger["ok"] + ledger["late"] != sent - len(broken):
    fail(f"the ledger {ledger} disagrees with the clients ({len(broken)} broken streams)")
print(f"ok: {sent} requests, {len(broken)} streams ended by the faults with one error "
      f"event, every other request served, the stopped backend back in service")
