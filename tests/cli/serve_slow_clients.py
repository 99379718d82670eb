"""Slow clients against `serve --max-connections 16 --timeout 2` (issue 38
item 1): 16 connections that each send one header byte per second, then 16
that send their headers and one body byte per second, would hold every
connection for 40 s; with the whole-request deadline each is shut down
about 2 s after it connected, /health is answered again within a few
seconds, and /metrics counts the connections cut. Also (item 15) a body
framed two ways is refused at once: two different Content-Length values
400, a Transfer-Encoding other than chunked 501.
usage: serve_slow_clients.py URL"""
import socket
import sys
import threading
import time
import urllib.request

url = sys.argv[1]
host, port = url.split("//")[1].split(":")
port = int(port)
fails = 0


def check(ok, what):
    global fails
    print(("ok   - " if ok else "FAIL - ") + what)
    fails += 0 if ok else 1


def slow(payload, head, cut):
    """Send head at once, then payload one byte a second; cut[0] gets the
    seconds until the server closed the connection (None: it never did)."""
    s = socket.create_connection((host, port))
    t0 = time.monotonic()
    try:
        s.sendall(head)
        for b in payload:
            s.sendall(bytes([b]))
            s.settimeout(1.0)
            try:
                if s.recv(4096) == b"":
                    break
            except socket.timeout:
                pass
        else:
            return
        cut[0] = time.monotonic() - t0
    except OSError:
        cut[0] = time.monotonic() - t0
    finally:
        s.close()


def health_within(limit):
    """Seconds until GET /health answers, polling; None past limit."""
    t0 = time.monotonic()
    while time.monotonic() - t0 < limit:
        try:
            with urllib.request.urlopen(url + "/health", timeout=1) as r:
                if r.status == 200:
                    return time.monotonic() - t0
        except Exception:
            time.sleep(0.2)
    return None


for name, head, payload in (
        ("one header byte a second", b"G", b"ET /health HTTP/1.1\r\nHost: x\r\nX-Slow: aaaaaaaaaaaaaaaaaaaa\r\n\r\n"),
        ("one body byte a second",
         b"POST /v1/embeddings HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
         b"Content-Length: 40\r\n\r\n", b'{"input": ["aaaaaaaaaaaaaaaaaaaaaaaa"]}')):
    cuts = [[None] for _ in range(16)]
    ts = [threading.Thread(target=slow, args=(payload, head, cuts[i])) for i in range(16)]
    [t.start() for t in ts]
    time.sleep(0.5)  # every connection slot taken
    h = health_within(15)
    [t.join(60) for t in ts]
    check(h is not None and h < 10, "%s x16: /health answered after %s s (the clients would "
          "take 40 s)" % (name, "%.1f" % h if h is not None else "> 15"))
    got = [c[0] for c in cuts if c[0] is not None]
    check(len(got) == 16 and max(got) < 10, "%s x16: every connection cut by the server (%s)"
          % (name, ", ".join("%.1f" % g for g in sorted(got)) or "none"))
with urllib.request.urlopen(url + "/metrics", timeout=5) as r:
    text = r.read().decode()
n = [l for l in text.splitlines() if l.startswith("squint_request_deadline_closed_total ")]
check(n and int(n[0].split()[1]) >= 32, "/metrics: %s" % (n[0] if n else "no deadline counter"))


def raw(req):
    """The status line of the answer to the raw request bytes req."""
    s = socket.create_connection((host, port))
    s.settimeout(5)
    try:
        s.sendall(req)
        data = b""
        while b"\r\n" not in data:
            got = s.recv(4096)
            if not got:
                break
            data += got
        return data.split(b"\r\n")[0].decode(errors="replace")
    except socket.timeout:
        return "timeout"
    finally:
        s.close()


# issue 38 item 15: body framing refused at once, not left to the timeout
body = b'{"input": ["a"]}'
st = raw(b"POST /v1/embeddings HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
         b"Content-Length: %d\r\nContent-Length: %d\r\n\r\n" % (len(body), len(body) + 5) + body)
check(st.startswith("HTTP/1.1 400"), "two different Content-Length headers: %s" % st)
st = raw(b"POST /v1/embeddings HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
         b"Transfer-Encoding: gzip, chunked\r\n\r\n")
check(st.startswith("HTTP/1.1 501"), "Transfer-Encoding: gzip, chunked: %s" % st)
st = raw(b"POST /v1/embeddings HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
         b"Content-Length: %d\r\nContent-Length: %d\r\n\r\n" % (len(body), len(body)) + body)
check(st.startswith("HTTP/1.1 200"), "the same Content-Length twice is fine: %s" % st)
# a client that sends its request in time is served as before
with urllib.request.urlopen(url + "/health", timeout=5) as r:
    check(r.status == 200, "a prompt client is still served")
print("%d failure(s)" % fails)
sys.exit(1 if fails else 0)
