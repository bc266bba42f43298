# Eight concurrent 16 MiB bodies (valid JSON, 2.7 M numbers, wrong count: 400) against a
# running `tessera serve` of examples/serve/run-sleep.yaml, three rounds, with the server's
# RSS and peak RSS after each (docs/reliability.md#figures).
#   python3 tests/robustness/big_bodies.py PORT PID
import socket, sys, threading, time
port, pid = int(sys.argv[1]), sys.argv[2]
def rss():
    d = {}
    for line in open(f"/proc/{pid}/status"):
        k, v = line.split(":", 1)
        d[k] = int(v.split()[0]) // 1024 if v.strip().endswith("kB") else v
    return d["VmRSS"], d["VmHWM"]
nums = ",".join(["0.123"] * 2_700_000)
body = ('{"inputs":[{"datatype":"FP32","shape":[16],"data":[' + nums + ']}]}').encode()
body = body[: (16 << 20) - 1] if len(body) >= (16 << 20) else body
print("body bytes", len(body))
statuses = []
def one():
    s = socket.create_connection(("127.0.0.1", port))
    s.sendall(b"POST /v2/models/vision_pipeline/infer HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n" % len(body) + body)
    data = s.recv(4096)
    statuses.append(data.split(b" ")[1].decode() if data else "none")
    s.close()
print("before: rss %d MiB, peak %d MiB" % rss())
for rnd in range(3):
    ts = [threading.Thread(target=one) for _ in range(8)]
    [t.start() for t in ts]; [t.join() for t in ts]
    time.sleep(0.5)
    print("round %d statuses %s; rss %d MiB, peak %d MiB" % ((rnd, sorted(statuses)) + rss()))
    statuses.clear()
