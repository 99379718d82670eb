#!/usr/bin/env bash
# The reference stack for the real-model tests: a venv over Debian's python3
# (which brings PyTorch 1.13 and NumPy from python3-torch / python3-numpy) with
# the pinned PyPI packages of scripts/ref_requirements.txt, and of any further
# requirements files named (the peers' benchmark adds its own). Idempotent: a
# venv whose stamp matches the requirements files is reused. Built in a temporary
# folder and renamed into place; use it as DIR/bin/python (-m pip): the
# console scripts inside keep the temporary folder's path.
# usage: scripts/ref_venv.sh [DIR [REQUIREMENTS...]]
#        (default out/cache/venv-ref; prints DIR/bin/python)
# Exit status 3 when PyPI cannot be reached (a connection error or timeout:
# callers skip), 1 on any other error (a pin PyPI lacks is an error).
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
dir=$(realpath -m "${1:-$here/../out/cache/venv-ref}")
reqs=("$here/ref_requirements.txt" "${@:2}")
stamp=$(cat "${reqs[@]}" | sha256sum | cut -d' ' -f1) || exit 1
pip_reqs=()
for r in "${reqs[@]}"; do pip_reqs+=(-r "$r"); done
if [[ -x $dir/bin/python && $(cat "$dir/.stamp" 2>/dev/null) == "$stamp" ]]; then
  echo "$dir/bin/python"; exit 0
fi
/usr/bin/python3 -c 'import torch, numpy' 2>/dev/null ||
  { echo "ref_venv: Debian's python3-torch / python3-numpy are missing (scripts/setup.sh --test)" >&2; exit 1; }
mkdir -p "$(dirname "$dir")"
tmp=$(mktemp -d "$dir.tmp.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
/usr/bin/python3 -m venv --system-site-packages "$tmp" ||
  { echo "ref_venv: python3 -m venv failed (python3-venv missing?)" >&2; exit 1; }
if ! "$tmp/bin/python" -m pip install --quiet --disable-pip-version-check --timeout 30 --retries 1 \
    "${pip_reqs[@]}" >"$tmp/pip.log" 2>&1; then
  if grep -q -E "NewConnectionError|Max retries exceeded|name resolution|Network is unreachable|Connection refused|timed out|ProxyError" "$tmp/pip.log"; then
    echo "ref_venv: PyPI not reachable: $(tail -1 "$tmp/pip.log")" >&2; exit 3
  fi
  echo "ref_venv: pip install failed:" >&2; tail -5 "$tmp/pip.log" >&2; exit 1
fi
"$tmp/bin/python" -c 'import torch, transformers, tokenizers, sentence_transformers' ||
  { echo "ref_venv: the installed stack does not import" >&2; exit 1; }
echo "$stamp" >"$tmp/.stamp"
rm -rf "$dir" && mv "$tmp" "$dir" || { echo "ref_venv: could not move the venv to $dir" >&2; exit 1; }
trap - EXIT
"$dir/bin/python" -c 'import sentence_transformers' || { echo "ref_venv: the moved venv does not import" >&2; exit 1; }
echo "$dir/bin/python"
