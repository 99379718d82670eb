"""The checks of tests/cli/test_serve_completions.sh against a running
`squint serve` of a causal LM (Python standard library only). Every check
states what it proves; none depends on timing: where a state must be reached
(a cancelled stream's slot given back) the check polls /metrics, bounded.

usage: serve_completions_checks.py SQUINT MODEL URL DRAFT_URL ENCODER_URL
"""
import http.client
import json
import re
import socket
import struct
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.parse
import urllib.request

sq, model, url, draft_url, enc_url = sys.argv[1:6]
failures = 0


def check(ok, what):
    global failures
    print(("ok   - " if ok else "FAIL - ") + what, flush=True)
    if not ok:
        failures += 1


def call(base, path, body=None, method=None, raw=None):
    """(status, headers, parsed JSON or text)."""
    data = raw if raw is not None else (json.dumps(body).encode() if body is not None else None)
    req = urllib.request.Request(base + path, data=data, method=method)
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


def complete(body, base=None):
    return call(base or url, "/v1/completions", body)


def stream(body, base=None):
    """(status, content type, [events as parsed JSON], saw [DONE] last)."""
    u = urllib.parse.urlsplit(base or url)
    c = http.client.HTTPConnection(u.hostname, u.port, timeout=120)
    c.request("POST", "/v1/completions", json.dumps(dict(body, stream=True)),
              {"Content-Type": "application/json"})
    r = c.getresponse()
    raw = r.read().decode("utf-8")
    c.close()
    events, done = [], False
    for block in raw.split("\n\n"):
        if not block:
            continue
        if not block.startswith("data: "):
            return r.status, r.getheader("Content-Type"), None, False
        payload = block[6:]
        if payload == "[DONE]":
            done = True
            continue
        if done:
            return r.status, r.getheader("Content-Type"), None, False  # after [DONE]
        events.append(json.loads(payload))
    return r.status, r.getheader("Content-Type"), events, done


def generate(prompt, max_tokens, *extra):
    """squint generate's text (bytes, its trailing newline dropped), prompt tokens, generated, stop."""
    p = subprocess.run([sq, "generate", model, "--prompt", prompt, "--max-tokens", str(max_tokens),
                        "--threads", "1", *extra], capture_output=True)
    assert p.returncode == 0, p.stderr
    m = re.search(rb"(\d+) prompt tokens, (\d+) generated \(stop: (\w+)\)", p.stderr)
    assert p.stdout.endswith(b"\n")
    return p.stdout[:-1], int(m.group(1)), int(m.group(2)), m.group(3).decode()


def metric(name, base=None):
    _, _, text = call(base or url, "/metrics")
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


# --- /info, /health ---
st, _, info = call(url, "/info")
check(st == 200 and info.get("kind") == "decoder" and info.get("context") == 512 and
      info.get("vocab") == 512, "GET /info: a decoder, context 512, vocab 512 (%s)" % info)
st, _, body = call(url, "/health")
check(st == 200 and body == {"status": "ok"}, "GET /health: ok")

# --- greedy: the bytes of `squint generate`, finish_reason and usage ---
cases = [("Once upon a time", 40), ("", 30), ("The cat", 511), ("Lily and Ben", 0),
         ("Café naïve — 東京 ", 25), ("the dog ran. " * 70, 512)]
refs = {}
for prompt, n in cases:
    ref, pt, gen, stop = generate(prompt, n)
    refs[(prompt, n)] = ref
    st, _, b = complete({"prompt": prompt, "max_tokens": n})
    ok = st == 200
    if ok:
        ch = b["choices"][0]
        want_finish = "stop" if stop == "eos" else "length"
        ok = (ch["text"].encode() == ref and ch["finish_reason"] == want_finish and
              ch["index"] == 0 and b["usage"] == {"prompt_tokens": pt, "completion_tokens": gen,
                                                  "total_tokens": pt + gen} and
              b["object"] == "text_completion" and re.fullmatch(r"cmpl-\d+", b["id"]) and
              isinstance(b["created"], int) and abs(b["created"] - time.time()) < 3600 and
              b["model"] == "stories260K.bin")
    check(ok, "greedy %r, max_tokens %d: the bytes of squint generate, finish_reason %s, usage "
          "%d + %d (%s)" % (prompt[:20], n, stop, pt, gen, "" if ok else b))
# the /completions alias and the default max_tokens (16)
ref16, pt16, _, _ = generate("Once upon a time", 16)
st, _, b = call(url, "/completions", {"prompt": "Once upon a time"})
check(st == 200 and b["choices"][0]["text"].encode() == ref16 and
      b["usage"]["completion_tokens"] == 16, "POST /completions, max_tokens by default 16")

# --- streamed: the pieces joined are the whole text ---
for prompt, n in cases:
    st, ctype, ev, done = stream({"prompt": prompt, "max_tokens": n})
    _, _, whole = complete({"prompt": prompt, "max_tokens": n})
    ok = st == 200 and ctype == "text/event-stream" and ev is not None and done and len(ev) >= 1
    if ok:
        text = "".join(e["choices"][0]["text"] for e in ev)
        ok = (text == whole["choices"][0]["text"] and
              all(e["choices"][0]["finish_reason"] is None for e in ev[:-1]) and
              ev[-1]["choices"][0]["finish_reason"] == whole["choices"][0]["finish_reason"] and
              ev[-1]["choices"][0]["text"] == "" and ev[-1]["usage"] == whole["usage"] and
              len({e["id"] for e in ev}) == 1 and
              (n == 0 or len(ev) > 1 + whole["usage"]["completion_tokens"] // 2))
    check(ok, "streamed %r, max_tokens %d: %s events, joined = the whole text, last chunk with "
          "finish_reason and usage, then [DONE]" % (prompt[:20], n, len(ev) if ev else ev))

# --- stop strings ---
full = refs[("The cat", 511)].decode()
for stop in (["Tim"], "box", ["zzz", "ttle bo"], ["They", "he"], ["."], ["\n"],
             ["with their toys and seek"], ["!\"\n", "zz"], ["park. They"]):
    stops = [stop] if isinstance(stop, str) else stop
    hits = [full.find(s) for s in stops if s in full]
    cut = min(hits) if hits else None
    st, _, b = complete({"prompt": "The cat", "max_tokens": 511, "stop": stop})
    want = full[:cut] if cut is not None else full
    ok = (cut is not None and st == 200 and b["choices"][0]["text"] == want and
          b["choices"][0]["finish_reason"] == "stop" and b["usage"]["completion_tokens"] < 209)
    st2, _, ev, done = stream({"prompt": "The cat", "max_tokens": 511, "stop": stop})
    ok2 = st2 == 200 and done and "".join(e["choices"][0]["text"] for e in ev) == want and \
        ev[-1]["choices"][0]["finish_reason"] == "stop"
    check(ok and ok2, "stop %r: the text before the first (%s chars), finish_reason stop, streamed "
          "the same" % (stop, len(want)))
st, _, b = complete({"prompt": "The cat", "max_tokens": 511, "stop": ["never-in-the-text"]})
check(st == 200 and b["choices"][0]["text"] == full, "a stop string that never comes: the whole text")
st, _, b = complete({"prompt": "Once upon a time", "max_tokens": 40, "stop": []})
check(st == 200 and b["choices"][0]["text"].encode() == refs[("Once upon a time", 40)],
      "an empty stop list: no stop")

# --- sampling: a seed reproduces, as squint generate with the same settings ---
P = "Once upon a time, a little dog"
samp = {"prompt": P, "max_tokens": 80, "temperature": 0.9, "top_p": 0.9}
a = complete(dict(samp, seed=42))[2]
b2 = complete(dict(samp, seed=42))[2]
c = complete(dict(samp, seed=43))[2]
ref42 = generate(P, 80, "--temperature", "0.9", "--top-p", "0.9", "--seed", "42")[0]
check(a["choices"][0]["text"] == b2["choices"][0]["text"] and a["choices"][0]["text"].encode() == ref42,
      "seed 42 twice: the same text, the text of squint generate --seed 42")
check(a["choices"][0]["text"] != c["choices"][0]["text"], "seed 43: another text")
st, _, ev, done = stream(dict(samp, seed=42))
check(done and "".join(e["choices"][0]["text"] for e in ev) == a["choices"][0]["text"],
      "seed 42 streamed: the same text")

# --- concurrency: 8 clients at once (the model shared, a KV cache each) ---
results = [None] * 8


errors = [None] * 8


def worker(i):
    p = "Once upon a time" if i % 2 == 0 else "The cat"
    n = 40 if i % 2 == 0 else 511
    try:
        if i % 4 < 2:
            results[i] = complete({"prompt": p, "max_tokens": n})[2]["choices"][0]["text"] == refs[(p, n)].decode()
        else:
            _, _, ev, done = stream({"prompt": p, "max_tokens": n})
            results[i] = done and "".join(e["choices"][0]["text"] for e in ev) == refs[(p, n)].decode()
    except Exception as e:  # reported below, not lost in the thread
        errors[i] = repr(e)


ts = [threading.Thread(target=worker, args=(i,)) for i in range(8)]
for t in ts:
    t.start()
for t in ts:
    t.join()
check(all(results), "8 concurrent completions (whole and streamed): each the bytes of squint generate"
      + ("" if all(results) else f" (results {results}, errors {[e for e in errors if e]})"))

# --- hostile bodies: 400 with a message ---
long_prompt = "the dog ran. " * 400
hostile = [
    (b'{"prompt": ', "malformed JSON"),
    (b'["prompt"]', "an array body"),
    (b'"text"', "a string body"),
    (b'{}', "no prompt"),
    (b'{"prompt": 5}', "a number prompt"),
    (b'{"prompt": ["a", "b"]}', "an array of prompts"),
    (b'{"prompt": [1, 2, 3]}', "token ids"),
    (b'{"prompt": null}', "a null prompt"),
    (b'{"prompt": "a", "prompt": "b"}', "a duplicate key"),
    (b'{"prompt": "\xff\xfe"}', "invalid UTF-8"),
    (b'{"prompt": "a\xc3"}', "a cut UTF-8 character"),
    (b'{"prompt": "\\ud800"}', "a lone surrogate"),
    (b'{"prompt": "a\\u0000b"}', "a NUL"),
    (b'{"prompt": "a", "max_tokens": -1}', "max_tokens -1"),
    (b'{"prompt": "a", "max_tokens": "16"}', "max_tokens a string"),
    (b'{"prompt": "a", "max_tokens": 1.5}', "max_tokens 1.5"),
    (b'{"prompt": "a", "max_tokens": 513}', "max_tokens beyond the context"),
    (b'{"prompt": "a", "max_tokens": 9223372036854775807}', "max_tokens 2^63-1"),
    (b'{"prompt": "a", "max_tokens": 99999999999999999999999}', "max_tokens past int64"),
    (b'{"prompt": "a", "temperature": -0.5}', "temperature < 0"),
    (b'{"prompt": "a", "temperature": 2.5}', "temperature > 2"),
    (b'{"prompt": "a", "temperature": "hot"}', "temperature a string"),
    (b'{"prompt": "a", "temperature": NaN}', "temperature NaN"),
    (b'{"prompt": "a", "temperature": 1e999}', "temperature 1e999"),
    (b'{"prompt": "a", "temperature": true}', "temperature true"),
    (b'{"prompt": "a", "top_p": 0}', "top_p 0"),
    (b'{"prompt": "a", "top_p": 1.01}', "top_p > 1"),
    (b'{"prompt": "a", "top_p": -1}', "top_p < 0"),
    (b'{"prompt": "a", "seed": -1}', "seed -1"),
    (b'{"prompt": "a", "seed": 1.5}', "seed 1.5"),
    (b'{"prompt": "a", "seed": "42"}', "seed a string"),
    (b'{"prompt": "a", "stream": "yes"}', "stream a string"),
    (b'{"prompt": "a", "stream": 1}', "stream 1"),
    (b'{"prompt": "a", "stop": 5}', "stop a number"),
    (b'{"prompt": "a", "stop": [1]}', "stop [1]"),
    (b'{"prompt": "a", "stop": ["a", "b", "c", "d", "e"]}', "5 stop strings"),
    (b'{"prompt": "a", "stop": ""}', "an empty stop string"),
    (('{"prompt": "a", "stop": "%s"}' % ("x" * 300)).encode(), "a 300-byte stop string"),
    (b'{"prompt": "a", "n": 2}', "n 2"),
    (b'{"prompt": "a", "best_of": 3}', "best_of 3"),
    (b'{"prompt": "a", "echo": true}', "echo true"),
    (b'{"prompt": "a", "logprobs": 5}', "logprobs 5"),
    (b'{"prompt": "a", "suffix": "end"}', "a suffix"),
    (b'{"prompt": "a", "presence_penalty": 1}', "presence_penalty"),
    (b'{"prompt": "a", "logit_bias": {"5": 100}}', "logit_bias"),
    (b'{"prompt": "a", "model": 7}', "model a number"),
    (json.dumps({"prompt": long_prompt}).encode(), "a prompt far beyond the context"),
    (json.dumps({"prompt": "the dog ran. " * 100}).encode(), "a prompt just beyond the context"),
    (json.dumps({"prompt": "the dog ran. " * 600000}).encode(), "a prompt of 7.8 MB"),
]
bad = []
for raw, what in hostile:
    st, hdrs, b = call(url, "/v1/completions", raw=raw)
    msg = b.get("error", {}).get("message", "") if isinstance(b, dict) else ""
    if not (st == 400 and msg and hdrs.get("Content-Type") == "application/json" and
            b["error"].get("type") == "invalid_request_error"):
        bad.append("%s: %s %s" % (what, st, b))
check(not bad, "%d hostile bodies: each 400 with an OpenAI-style error message%s" %
      (len(hostile), "" if not bad else ": " + "; ".join(bad)))
st, _, b = call(url, "/v1/completions", raw=json.dumps({"prompt": long_prompt}).encode())
check("context is 512" in b["error"]["message"] and "tokens" in b["error"]["message"],
      "a prompt far beyond the context: the message says so (%s)" % b["error"]["message"])
st, _, b = call(url, "/v1/completions", raw=json.dumps({"prompt": "the dog ran. " * 100}).encode())
check(re.match(r"the prompt is \d+ tokens; the model's context is 512", b["error"]["message"]) is not None,
      "a prompt just beyond the context, encoded: the message says so (%s)" % b["error"]["message"])
st, _, b = call(url, "/v1/completions", raw=b'{"prompt": "a", "max_tokens": 513}')
check("max_tokens" in b["error"]["message"], "max_tokens beyond the context: named (%s)" % b["error"]["message"])
st, _, b = complete({"prompt": "Once upon a time", "max_tokens": 5, "user": "x", "whatever": [1]})
check(st == 200, "unknown fields are ignored (as on the embedding endpoints)")
st, _, b = complete({"prompt": "Once upon a time", "max_tokens": 5, "n": 1, "echo": False,
                     "logprobs": None, "presence_penalty": 0, "stream": False, "seed": 3})
check(st == 200, "the unsupported fields at their defaults are accepted")
st, hdrs, b = call(url, "/v1/completions")
check(st == 405 and hdrs.get("Allow") == "POST", "GET /v1/completions: 405, Allow: POST")

# --- a decoder refuses the encoder endpoints, an encoder refuses completions ---
for path, body in (("/v1/embeddings", {"input": "a"}), ("/embed", {"inputs": "a"}),
                   ("/rerank", {"query": "a", "texts": ["b"]}), ("/classify", {"inputs": "a"})):
    st, _, b = call(url, path, body)
    text = json.dumps(b)
    check(st in (400, 404) and "/v1/completions" in text,
          "%s on a causal LM: %d pointing at /v1/completions" % (path, st))
st, _, b = call(enc_url, "/v1/completions", {"prompt": "a"})
check(st == 400 and "encoder" in b["error"]["message"], "/v1/completions on an encoder: 400 (%s)" %
      b.get("error", {}).get("message"))
st, _, b = call(enc_url, "/v1/embeddings", {"input": "a"})
check(st == 200, "the encoder still embeds")

# --- a client that leaves mid-stream: generation ends, the slot comes back ---
wait_for(lambda: metric("squint_generations_active") == 0, "the earlier streams over")
before = (metric("squint_completions_total") or 0) + (metric("squint_completions_cancelled_total") or 0)
u = urllib.parse.urlsplit(url)
for _ in range(5):
    s = socket.create_connection((u.hostname, u.port), timeout=60)
    body = json.dumps({"prompt": "Once upon a time", "max_tokens": 512, "stream": True}).encode()
    s.sendall(b"POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
              b"Content-Length: %d\r\n\r\n%s" % (len(body), body))
    got = b""
    while b"data: " not in got:
        chunk = s.recv(256)
        if not chunk:
            break
        got += chunk
    s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    s.close()  # a reset, mid-stream
ok = wait_for(lambda: metric("squint_generations_active") == 0 and
              (metric("squint_completions_total") or 0) + (metric("squint_completions_cancelled_total") or 0)
              == before + 5, "5 abandoned streams over, no generation running")
cancelled = metric("squint_completions_cancelled_total")
st, _, b = complete({"prompt": "Once upon a time", "max_tokens": 40})
check(ok and st == 200 and b["choices"][0]["text"].encode() == refs[("Once upon a time", 40)],
      "5 clients gone mid-stream (%d seen as cancelled): every slot given back, the server still "
      "answers the same text" % (cancelled or 0))

# --- assisted generation (--draft): greedy text unchanged ---
if draft_url != "-":
    st, _, b = complete({"prompt": "The cat", "max_tokens": 511}, draft_url)
    _, _, ev, done = stream({"prompt": "Once upon a time", "max_tokens": 40}, draft_url)
    check(st == 200 and b["choices"][0]["text"].encode() == refs[("The cat", 511)] and done and
          "".join(e["choices"][0]["text"] for e in ev).encode() == refs[("Once upon a time", 40)],
          "serve --draft: greedy text the same as without the draft, whole and streamed")
    st, _, info = call(draft_url, "/info")
    check(info.get("draft") is not None, "/info names the draft")

# --- /metrics ---
n400 = metric('squint_requests_total{endpoint="/v1/completions",code="400"}')
toks = metric("squint_completion_tokens_total")
check((n400 or 0) >= len(hostile) and (toks or 0) > 1000 and metric("squint_completions_total") > 20,
      "/metrics: completions %s, tokens generated %s, 400s %s" %
      (metric("squint_completions_total"), toks, n400))

print("%d failure(s)" % failures)
sys.exit(1 if failures else 0)
