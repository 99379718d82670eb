#!/usr/bin/env bash
# The reference stack for the real-model tests: a venv over Debian's python3
# (which brings PyTorch 1.13 and NumPy from python3-torch / python3-numpy) with
# the pinned PyPI packages of scripts/ref_requirements.txt. Idempotent: a venv
# whose stamp matches the requirements file is reused.
# usage: scripts/ref_venv.sh [DIR]   (default out/cache/venv-ref; prints DIR/bin/python)
# Exit status 3 when PyPI cannot be reached (callers skip), 1 on other errors.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
dir=$(realpath -m "${1:-$here/../out/cache/venv-ref}")
req=$here/ref_requirements.txt
stamp=$(sha256sum "$req" | cut -d' ' -f1)
if [[ -x $dir/bin/python && $(cat "$dir/.stamp" 2>/dev/null) == "$stamp" ]]; then
  echo "$dir/bin/python"; exit 0
fi
/usr/bin/python3 -c 'import torch, numpy' 2>/dev/null ||
  { echo "ref_venv: Debian's python3-torch / python3-numpy are missing (scripts/setup.sh --test)" >&2; exit 1; }
rm -rf "$dir.tmp"
/usr/bin/python3 -m venv --system-site-packages "$dir.tmp" ||
  { echo "ref_venv: python3 -m venv failed (python3-venv missing?)" >&2; exit 1; }
if ! "$dir.tmp/bin/pip" install --quiet --disable-pip-version-check -r "$req" >"$dir.tmp/pip.log" 2>&1; then
  if grep -q -E "No matching distribution|Could not find a version|NewConnectionError|Max retries" "$dir.tmp/pip.log"; then
    echo "ref_venv: PyPI not reachable: $(tail -1 "$dir.tmp/pip.log")" >&2; rm -rf "$dir.tmp"; exit 3
  fi
  echo "ref_venv: pip install failed:" >&2; tail -5 "$dir.tmp/pip.log" >&2; rm -rf "$dir.tmp"; exit 1
fi
"$dir.tmp/bin/python" -c 'import torch, transformers, tokenizers, sentence_transformers' ||
  { echo "ref_venv: the installed stack does not import" >&2; rm -rf "$dir.tmp"; exit 1; }
echo "$stamp" >"$dir.tmp/.stamp"
rm -rf "$dir" && mv "$dir.tmp" "$dir"
echo "$dir/bin/python"
