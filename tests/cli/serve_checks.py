"""The checks of tests/cli/test_serve.sh against running `squint serve`
instances (Python standard library only: urllib, http.client, socket,
threading). Every check states what it proves; none depends on timing: where
a state must be reached first (a request waiting in the queue) the check
polls /metrics for it.

usage: serve_checks.py MAIN_URL REF.f32 DIM TEXTS.txt LIMITS_URL QUEUE_URL QUEUE_PID KEY_URL KEY SLOW_URL DRAIN_URL DRAIN_PID
"""
import base64
import http.client
import json
import os
import signal
import socket
import struct
import sys
import threading
import time
import urllib.error
import urllib.request

(main_url, ref_path, dim, texts_path, limits_url, queue_url, queue_pid, key_url, key, slow_url,
 drain_url, drain_pid) = sys.argv[1:13]
dim = int(dim)
texts = open(texts_path, encoding="utf-8").read().split("\n")[:-1]
raw = open(ref_path, "rb").read()
ref = [raw[i * 4 * dim:(i + 1) * 4 * dim] for i in range(len(texts))]
failures = 0


def check(ok, what):
    global failures
    print(("ok   - " if ok else "FAIL - ") + what, flush=True)
    if not ok:
        failures += 1


def call(url, path, body=None, method=None, headers=None, raw_body=None):
    """(status, headers, parsed JSON or text)."""
    data = raw_body if raw_body is not None else (json.dumps(body).encode() if body is not None else None)
    req = urllib.request.Request(url + path, data=data, method=method, headers=headers or {})
    if data is not None:
        req.add_header("Content-Type", "application/json")
    try:
        with urllib.request.urlopen(req, timeout=120) as r:
            status, hdrs, payload = r.status, dict(r.headers), r.read()
    except urllib.error.HTTPError as e:
        status, hdrs, payload = e.code, dict(e.headers), e.read()
    try:
        return status, hdrs, json.loads(payload)
    except ValueError:
        return status, hdrs, payload.decode("utf-8", "replace")


def f32(row):
    return struct.pack("<%df" % len(row), *row)


def metric(url, name):
    _, _, text = call(url, "/metrics")
    for line in text.splitlines():
        if line.startswith(name + " ") or line.startswith(name + "{"):
            return float(line.rsplit(" ", 1)[1])
    return None


def wait_for(pred, what, limit=60.0):
    t0 = time.time()
    while time.time() - t0 < limit:
        if pred():
            return True
        time.sleep(0.02)
    check(False, "reached: " + what)
    return False


# --- health, info ---
st, _, body = call(main_url, "/health")
check(st == 200 and body == {"status": "ok"}, "GET /health: 200 {\"status\": \"ok\"}")
st, _, info = call(main_url, "/info")
check(st == 200 and info.get("dim") == dim, "GET /info: the model's width (%s)" % info.get("dim"))

# --- the same bytes as `squint embed` ---
st, _, body = call(main_url, "/v1/embeddings", {"input": texts, "model": "x"})
rows = [d["embedding"] for d in body["data"]] if st == 200 else []
check(st == 200 and len(rows) == len(texts) and all(f32(r) == ref[i] for i, r in enumerate(rows))
      and [d["index"] for d in body["data"]] == list(range(len(texts))),
      "OpenAI /v1/embeddings: %d texts, every embedding the float32 bytes of `squint embed`" % len(texts))
total = body["usage"]["prompt_tokens"] if st == 200 else -1
single = []
for i, t in enumerate(texts[:6]):
    s1, _, b1 = call(main_url, "/v1/embeddings", {"input": t})
    single.append(s1 == 200 and f32(b1["data"][0]["embedding"]) == ref[i])
check(all(single), "a single string input: the same bytes")
st, _, b64 = call(main_url, "/v1/embeddings", {"input": texts, "encoding_format": "base64"})
check(st == 200 and all(base64.b64decode(d["embedding"]) == ref[i] for i, d in enumerate(b64["data"])),
      "encoding_format base64: little-endian float32 of the same bytes")
tok = sum(call(main_url, "/v1/embeddings", {"input": t})[2]["usage"]["prompt_tokens"] for t in texts)
check(total == tok and total > 2 * len(texts), "usage.prompt_tokens: %d, the sum over the texts alone" % total)
st, _, tei = call(main_url, "/embed", {"inputs": texts})
check(st == 200 and all(f32(r) == ref[i] for i, r in enumerate(tei)), "TEI /embed: the same bytes")
st, _, raw_rows = call(main_url, "/embed", {"inputs": texts[0], "normalize": False})
norm = sum(x * x for x in raw_rows[0]) ** 0.5 if st == 200 else 0
check(st == 200 and abs(norm - 1) > 1e-3, "TEI normalize: false gives the unnormalized row (norm %.3f)" % norm)

# --- /rerank: cosine against the query, highest first ---
st, _, rr = call(main_url, "/rerank", {"query": texts[0], "texts": texts[1:]})
qv = struct.unpack("<%df" % dim, ref[0])
want = sorted(((sum(a * b for a, b in zip(qv, struct.unpack("<%df" % dim, ref[i]))), i - 1)
               for i in range(1, len(texts))), key=lambda t: (-t[0], t[1]))
check(st == 200 and [x["index"] for x in rr] == [i for _, i in want] and
      all(abs(x["score"] - s) < 1e-6 for x, (s, _) in zip(rr, want)),
      "POST /rerank: every text scored by its cosine with the query, highest first")
cli = [json.loads(l) for l in open(os.environ["SERVE_RERANK"])]
check([x["index"] for x in cli] == [x["index"] for x in rr] and [x["rank"] for x in cli] ==
      list(range(1, len(cli) + 1)) and all(abs(a["score"] - b["score"]) < 1e-7 for a, b in zip(cli, rr)),
      "`squint rerank` gives the order and scores of POST /rerank")
st, _, b = call(main_url, "/rerank", {"query": "a", "texts": []})
check(st == 400 and b.get("error_type") == "Validation", "/rerank without texts: 400")
st, _, b = call(main_url, "/rerank", {"query": "a", "texts": ["b"], "instruction": "judge"})
check(st == 400 and "causal LM" in b.get("error", ""), "/rerank with an instruction on an embedding model: 400")
# --- /classify (the main server has --head): what `squint classify` says ---
cls = [json.loads(l) for l in open(os.environ["SERVE_CLASSES"])]
st, _, cl = call(main_url, "/classify", {"inputs": texts})
check(st == 200 and len(cl) == len(texts) and all(
    row[0]["label"] == c["label"] and all(abs(x["score"] - c["probs"][x["label"]]) < 1e-7 for x in row)
    for row, c in zip(cl, cls)),
      "POST /classify: the labels and probabilities of `squint classify` (%s, ...)" % cl[0][0]["label"])
st, _, b = call(limits_url, "/classify", {"inputs": "a"})
check(st == 404 and "--head" in b.get("error", ""), "/classify on a server without a head: 404 naming --head")

# --- 16 concurrent clients ---
results, lock = [], threading.Lock()


def client(k):
    ok = True
    for j in range(100):
        idx = [(k * 7 + j * 3 + m) % len(texts) for m in range(1 + (k + j) % 5)]
        s, _, b = call(main_url, "/v1/embeddings", {"input": [texts[i] for i in idx]})
        ok = ok and s == 200 and all(f32(d["embedding"]) == ref[i] for d, i in zip(b["data"], idx))
    with lock:
        results.append(ok)


batches0 = metric(main_url, "squint_batch_sequences_count")
threads = [threading.Thread(target=client, args=(k,)) for k in range(16)]
for t in threads:
    t.start()
for t in threads:
    t.join()
batches = metric(main_url, "squint_batch_sequences_count") - batches0
check(len(results) == 16 and all(results),
      "16 concurrent clients x 100 requests: no error, every row the bytes of `squint embed` "
      "(%d encoder calls for 1,600 requests)" % batches)

# --- Matryoshka "dimensions": the bytes of `squint embed --dimensions 8` ---
raw8 = open(os.environ["SERVE_REF8"], "rb").read()
ref8 = [raw8[i * 32:(i + 1) * 32] for i in range(len(texts))]
st, _, b = call(main_url, "/v1/embeddings", {"input": texts[:5], "dimensions": 8})
check(st == 200 and [f32(d["embedding"]) for d in b["data"]] == ref8[:5],
      "OpenAI dimensions 8: the bytes of squint embed --dimensions 8")
st, _, b = call(main_url, "/embed", {"inputs": texts[:5], "dimensions": 8})
check(st == 200 and [f32(e) for e in b] == ref8[:5], "TEI dimensions 8: the same bytes")
st, _, b = call(main_url, "/classify", {"inputs": texts[:1], "dimensions": 8})
check(st == 400, "dimensions on /classify: 400")
for bad in (0, -1, "8", 1.5):
    st, _, _ = call(main_url, "/v1/embeddings", {"input": "a", "dimensions": bad})
    check(st == 400, "dimensions %r: 400" % (bad,))

# --- "precision": the codes of `squint embed --precision` (the server started
# with the ranges that embed wrote) ---
for prec, env in (("int8", "SERVE_P8"), ("ubinary", "SERVE_PB")):
    want = [json.loads(l)["embedding"] for l in open(os.environ[env])][:5]
    st, _, b = call(main_url, "/v1/embeddings", {"input": texts[:5], "precision": prec})
    check(st == 200 and [d["embedding"] for d in b["data"]] == want,
          "OpenAI precision %s: the codes of squint embed --precision %s" % (prec, prec))
    st, _, b = call(main_url, "/embed", {"inputs": texts[:5], "precision": prec})
    check(st == 200 and b == want, "TEI precision %s: the same codes" % prec)
st, _, b = call(main_url, "/v1/embeddings", {"input": texts[:2], "precision": "int8",
                                             "encoding_format": "base64"})
p8 = [json.loads(l)["embedding"] for l in open(os.environ["SERVE_P8"])][:2]
check(st == 200 and [base64.b64decode(d["embedding"]) for d in b["data"]] ==
      [struct.pack("%db" % len(r), *r) for r in p8], "precision int8, base64: the code bytes")
for body, what in (({"input": "a", "precision": "fp16"}, "an unknown precision"),
                   ({"input": "a", "precision": "int8", "dimensions": 8}, "int8 with dimensions")):
    st, _, _ = call(main_url, "/v1/embeddings", body)
    check(st == 400, "%s: 400" % what)
st, _, _ = call(limits_url, "/v1/embeddings", {"input": "a", "precision": "int8"})
check(st == 400, "int8 on a server without --ranges: 400")

# --- bad requests: JSON errors, right status ---
for path, body, raw_b, want, what in [
        ("/v1/embeddings", None, b"{not json", 400, "a body that is not JSON"),
        ("/v1/embeddings", {"model": "m"}, None, 400, "no input"),
        ("/v1/embeddings", {"input": ["a", 3]}, None, 400, "a number among the inputs"),
        ("/v1/embeddings", {"input": [[101, 102]]}, None, 400, "token-id input"),
        ("/v1/embeddings", {"input": "a", "dimensions": dim + 1}, None, 400, "dimensions other than the model's"),
        ("/v1/embeddings", {"input": "a", "encoding_format": "int8"}, None, 400, "an unknown encoding_format"),
        ("/v1/embeddings", {"input": []}, None, 400, "an empty input array"),
        ("/embed", {"inputs": "a", "normalize": "yes"}, None, 400, "TEI normalize not a boolean"),
        ("/v1/embeddings", None, b'{"input": "a", "input": "b"}', 400, "a duplicate key"),
        ("/nope", None, None, 404, "an unknown path")]:
    st, _, b = call(main_url, path, body, raw_body=raw_b, method="POST" if (body or raw_b) else "GET")
    msg = b.get("error") if isinstance(b, dict) else None
    msg = msg.get("message") if isinstance(msg, dict) else msg
    check(st == want and isinstance(msg, str) and msg, "%s: %d with a JSON error (%s)" % (what, st, msg))
st, h, b = call(main_url, "/v1/embeddings")
check(st == 405 and h.get("Allow") == "POST", "GET /v1/embeddings: 405, Allow: POST")

# --- limits (that server: --max-body 4096 --max-inputs 64 --max-tokens 100) ---
st, _, b = call(limits_url, "/v1/embeddings", {"input": "x" * 5000})
check(st == 413, "a body over --max-body: 413 (%s)" % b["error"]["message"])
st, _, b = call(limits_url, "/v1/embeddings", {"input": ["a"] * 65})
check(st == 413, "65 inputs over --max-inputs 64: 413 (%s)" % b["error"]["message"])
st, _, b = call(limits_url, "/v1/embeddings", {"input": [texts[6]] * 8})
check(st == 413 and "--max-tokens" in b["error"]["message"],
      "tokens over --max-tokens: 413 (%s)" % b["error"]["message"])
st, _, b = call(limits_url, "/v1/embeddings", {"input": ["a"] * 30})
check(st == 200 and b["usage"]["prompt_tokens"] == 90, "30 short inputs (90 tokens) within every limit: 200")
host, port = limits_url.split("//")[1].split(":")
conn = http.client.HTTPConnection(host, int(port), timeout=60)
conn.putrequest("POST", "/embed")
conn.putheader("Transfer-Encoding", "chunked")
conn.putheader("Content-Type", "application/json")
conn.endheaders()
piece = b'{"inputs": "' + b"y" * 1000
for _ in range(6):
    conn.send(b"%x\r\n%s\r\n" % (len(piece), piece))
    piece = b"y" * 1000
conn.send(b'2\r\n"}\r\n0\r\n\r\n')
r = conn.getresponse()
eb = json.loads(r.read())
check(r.status == 413 and eb.get("error_type") == "Validation",
      "a chunked body growing past --max-body: 413, TEI error style (%s)" % eb.get("error"))
conn.close()

# --- API key (that server: SQUINT_API_KEY) ---
st, h, _ = call(key_url, "/v1/embeddings", {"input": "a"})
check(st == 401 and h.get("WWW-Authenticate") == "Bearer", "no API key: 401, WWW-Authenticate: Bearer")
st, _, _ = call(key_url, "/v1/embeddings", {"input": "a"}, headers={"Authorization": "Bearer " + key + "x"})
check(st == 401, "a wrong API key: 401")
st, _, _ = call(key_url, "/metrics", headers={"Authorization": "Bearer nope"})
check(st == 401, "/metrics needs the key too")
st, _, b = call(key_url, "/v1/embeddings", {"input": "a"}, headers={"Authorization": "Bearer " + key})
check(st == 200, "the right API key: 200")
st, _, _ = call(key_url, "/health")
check(st == 200, "/health without a key: 200")

# --- slow client (that server: --timeout 1) ---
host, port = slow_url.split("//")[1].split(":")
s = socket.create_connection((host, int(port)), timeout=30)
s.sendall(b"POST /embed HTTP/1.1\r\nHost: x\r\n")  # and nothing more
try:
    got = s.recv(100)
    closed = got == b"" or got.startswith(b"HTTP/1.1 408")
except (ConnectionResetError, socket.timeout) as e:
    closed = isinstance(e, ConnectionResetError)
check(closed, "a client that stops mid-request is disconnected by --timeout")
s.close()

# --- a full queue answers 503; SIGTERM finishes what is in flight ---
# that server: --queue 1 --batch-wait 4000 --max-batch 65536: a request
# waits in the queue ~4 s, which the checks observe through /metrics.
first = {}


def slow_request():
    first["r"] = call(queue_url, "/v1/embeddings", {"input": texts[:3]})


t = threading.Thread(target=slow_request)
t.start()
if wait_for(lambda: metric(queue_url, "squint_queue_depth") == 1, "one request queued"):
    st, h, b = call(queue_url, "/embed", {"inputs": "b"})
    check(st == 503 and h.get("Retry-After") == "1" and b.get("error_type") == "Overloaded",
          "the queue full (--queue 1): 503, Retry-After: 1")
    os.kill(int(queue_pid), signal.SIGTERM)
t.join()
st, _, b = first.get("r", (0, None, None))
check(st == 200 and all(f32(d["embedding"]) == ref[i] for i, d in enumerate(b["data"])),
      "SIGTERM while a request waits: it still completes, 200, the right bytes")

# --- SIGTERM mid-load: nothing accepted is lost ---
# 8 clients send requests back to back (a new connection each) to the drain
# server; once it has answered 100, it gets SIGTERM. Every request must end
# as a 200 with the right bytes, a 503 "shutting down", or a refused
# connection (never sent); a connection cut after the request was sent, or
# a wrong row, would be a lost request.
outcomes, olock, stop_all = {"ok": 0, "503": 0, "refused": 0, "lost": [], "wrong": 0}, threading.Lock(), threading.Event()


def load_client(k):
    j = 0
    while not stop_all.is_set():
        idx = [(k * 5 + j) % len(texts)]
        j += 1
        try:
            s_, _, b_ = call(drain_url, "/v1/embeddings", {"input": [texts[i] for i in idx]})
        except urllib.error.URLError as e:
            with olock:
                if isinstance(e.reason, ConnectionRefusedError):
                    outcomes["refused"] += 1
                else:
                    outcomes["lost"].append(repr(e.reason))
            return
        except (ConnectionError, http.client.HTTPException) as e:
            with olock:
                outcomes["lost"].append(repr(e))
            return
        with olock:
            if s_ == 200:
                good = f32(b_["data"][0]["embedding"]) == ref[idx[0]]
                outcomes["ok" if good else "wrong"] += 1
            elif s_ == 503:
                outcomes["503"] += 1
            else:
                outcomes["lost"].append("status %d" % s_)


loaders = [threading.Thread(target=load_client, args=(k,)) for k in range(8)]
for t in loaders:
    t.start()
wait_for(lambda: outcomes["ok"] >= 100, "100 answers under load")
os.kill(int(drain_pid), signal.SIGTERM)
for t in loaders:
    t.join(timeout=120)
stop_all.set()
# What the clients saw, for the shell to hold against the server's own count
# of answered requests ("stopped after answering N requests"): equal means
# every request the server accepted was answered, and a reset connection
# (in the listen backlog when it closed) was never seen by it.
open(os.environ["SERVE_DRAIN_SEEN"], "w").write("%d\n" % (outcomes["ok"] + outcomes["503"]))
check(outcomes["ok"] >= 100 and outcomes["wrong"] == 0,
      "SIGTERM under load (8 clients): %d answered with the right bytes, %d 503 while draining, "
      "%d refused after, %d connections reset unread" % (outcomes["ok"], outcomes["503"],
                                                          outcomes["refused"], len(outcomes["lost"])))

print("%d failure(s)" % failures)
sys.exit(1 if failures else 0)
