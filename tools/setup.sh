#!/usr/bin/env bash
# Installs, with apt, whatever kernbench-gpu needs that is missing. Quiet and quick when
# everything is already there. The CUDA toolkit is optional and not installed here.
set -euo pipefail

pkgs=(cmake g++ make ninja-build pkg-config libyaml-cpp-dev nlohmann-json3-dev libgtest-dev libgmock-dev libcli11-dev
      libbenchmark-dev libthrust-dev libcub-dev python3 python3-matplotlib graphviz ccache openmpi-bin libopenmpi-dev
      python3-dev pybind11-dev python3-pytest python3-numpy python3-pandas python3-tqdm python3-pip)

missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  sudo=""
  if [ "$(id -u)" -ne 0 ]; then
    command -v sudo >/dev/null || { echo "error: setup needs root to install: ${missing[*]}" >&2; exit 2; }
    sudo="sudo"
  fi
  echo "setup: installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  $sudo apt-get update -qq
  $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

# lizard (PyPI; Debian does not package it) measures the size of each function for the test
# suite's Units.SmallFunctions; without it that test is skipped, saying so.
if ! python3 -c "import lizard" 2>/dev/null; then
  python3 -m pip install -q --break-system-packages lizard >/dev/null 2>&1 ||
    python3 -m pip install -q --user lizard >/dev/null 2>&1 ||
    echo "setup: could not install lizard from PyPI; Units.SmallFunctions will be skipped"
fi
