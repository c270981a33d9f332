#!/usr/bin/env bash
# tools/deps.sh — install the Debian packages ctorch needs to build, test and
# run its main job. Idempotent: apt-get runs only when something is missing.
# Usage: tools/deps.sh [extra-package ...]
set -euo pipefail

packages=(build-essential cmake ninja-build pkg-config libopenblas-dev libdnnl-dev zlib1g-dev
          openmpi-bin libopenmpi-dev
          ocl-icd-opencl-dev opencl-headers pocl-opencl-icd libclblast-dev clinfo
          dataset-fashion-mnist
          python3-numpy "$@")

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "deps: installing ${missing[*]}"
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi
