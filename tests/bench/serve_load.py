#!/usr/bin/env python3
"""Load generator for `squint serve` (Python standard library only).

N client threads, each with its own keep-alive connection, send POST
/v1/embeddings requests of K texts (taken in turn from a text file) back to
back until each has sent M requests. Prints one markdown row: clients,
texts per request, requests/s, texts/s, latency p50 / p90 / p99 (ms), and
the server's mean texts per encoder call over the run (from /metrics).

usage: serve_load.py URL TEXTS.txt [--clients N] [--requests M] [--texts K] [--header]
"""
import argparse
import http.client
import json
import threading
import time
import urllib.parse


def metric(host, port, name):
    c = http.client.HTTPConnection(host, port, timeout=60)
    c.request("GET", "/metrics")
    text = c.getresponse().read().decode()
    c.close()
    for line in text.splitlines():
        if line.startswith(name + " "):
            return float(line.split()[1])
    return 0.0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("url")
    ap.add_argument("texts")
    ap.add_argument("--clients", type=int, default=16)
    ap.add_argument("--requests", type=int, default=50)
    ap.add_argument("--texts", type=int, default=1, dest="k")
    ap.add_argument("--header", action="store_true")
    a = ap.parse_args()
    u = urllib.parse.urlparse(a.url)
    texts = [t for t in open(a.texts, encoding="utf-8").read().split("\n") if t]
    lat, errors, lock = [], [], threading.Lock()

    def client(cid):
        conn = http.client.HTTPConnection(u.hostname, u.port, timeout=300)
        mine = []
        for r in range(a.requests):
            start = (cid * a.requests + r) * a.k
            body = json.dumps({"input": [texts[(start + i) % len(texts)] for i in range(a.k)]})
            t0 = time.perf_counter()
            conn.request("POST", "/v1/embeddings", body, {"Content-Type": "application/json"})
            resp = conn.getresponse()
            payload = resp.read()
            mine.append(time.perf_counter() - t0)
            if resp.status != 200:
                with lock:
                    errors.append((resp.status, payload[:200]))
        conn.close()
        with lock:
            lat.extend(mine)

    texts0 = metric(u.hostname, u.port, "squint_batch_sequences_sum")
    calls0 = metric(u.hostname, u.port, "squint_batch_sequences_count")
    threads = [threading.Thread(target=client, args=(c,)) for c in range(a.clients)]
    t0 = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    wall = time.perf_counter() - t0
    calls = metric(u.hostname, u.port, "squint_batch_sequences_count") - calls0
    seqs = metric(u.hostname, u.port, "squint_batch_sequences_sum") - texts0
    lat.sort()
    n = len(lat)
    pct = lambda p: 1e3 * lat[min(n - 1, int(p * n))]
    if a.header:
        print("| clients | texts/request | requests/s | texts/s | p50 ms | p90 ms | p99 ms | texts per encoder call | errors |")
        print("|---|---|---|---|---|---|---|---|---|")
    print("| %d | %d | %.1f | %.1f | %.1f | %.1f | %.1f | %.1f | %d |"
          % (a.clients, a.k, n / wall, n * a.k / wall, pct(0.5), pct(0.9), pct(0.99),
             seqs / calls if calls else 0, len(errors)))
    for e in errors[:3]:
        print("error:", e)


if __name__ == "__main__":
    main()
