#!/usr/bin/env bash
# Install squint's build dependencies (Debian 12 packages) where missing, then
# configure and build with meson. Idempotent; run as root or with sudo.
#   scripts/setup.sh          build dependencies + build
#   scripts/setup.sh --test   also the test oracles (PyTorch, NumPy)
set -euo pipefail
cd "$(dirname "$0")/.."

pkgs=(build-essential pkg-config meson ninja-build libopenblas-dev libyaml-dev libzstd-dev
      libarchive-dev check libjansson-dev libutf8proc-dev libxxhash-dev libmicrohttpd-dev python3
      python3-pip python3-venv)
if [[ "${1:-}" == "--test" ]]; then
  pkgs+=(python3-torch python3-numpy python3-distributed curl valgrind zstd)
fi

missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "setup: installing ${missing[*]}"
  SUDO=""
  [[ $(id -u) -ne 0 ]] && SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

if [[ ! -f build/build.ninja ]]; then
  meson setup build --buildtype=release >/dev/null
fi
ninja -C build >/dev/null
echo "setup: built build/squint"
