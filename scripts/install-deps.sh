#!/usr/bin/env bash
# Installs everything GT needs to build and test, from Debian's packages (apt) and PyPI (pip).
# Idempotent: a second run checks and installs nothing new.
set -euo pipefail

APT_PACKAGES=(
  build-essential cmake ninja-build ccache pkg-config git
  llvm-19-dev libmlir-19-dev mlir-19-tools llvm-19-tools libzstd-dev zlib1g-dev
  capnproto libcapnp-dev libssl-dev openssl
  libyaml-cpp-dev
  pybind11-dev python3-pybind11
  libgloo-dev
  libopenblas-dev libomp-19-dev libdnnl-dev
  libgoogle-perftools-dev
  libgtest-dev libgmock-dev
  clang-19 libclang-rt-19-dev
  libcli11-dev
  dataset-fashion-mnist jargon-text
  iproute2
  tmux
  prometheus-cpp-dev prometheus
)

missing=()
for p in "${APT_PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "install-deps: apt-get install ${missing[*]}"
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO=sudo
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

PYTHON=${PYTHON:-python3}
PIP_PACKAGES=(numpy pytest scikit-build-core pybind11 lit filecheck safetensors ml_dtypes pyyaml matplotlib rich tqdm pillow tensorboard scipy)
if ! "$PYTHON" -c "import numpy, pytest, scikit_build_core, pybind11, lit, safetensors, ml_dtypes, yaml, matplotlib, rich, tqdm, PIL, tensorboard, scipy" 2>/dev/null; then
  echo "install-deps: pip install ${PIP_PACKAGES[*]}"
  "$PYTHON" -m pip install -q "${PIP_PACKAGES[@]}"
fi
# Intel oneMKL for the CPU worker's GEMMs (CMakeLists.txt: GT_BLAS), on x86-64. --no-deps: GT runs
# MKL on LLVM's libomp (libomp-19-dev), so MKL's own OpenMP runtime (intel-openmp) and TBB are not
# needed, and a second OpenMP runtime in the worker would make a second pool of threads.
if [ "$(uname -m)" = x86_64 ] && ! "$PYTHON" -m pip show mkl >/dev/null 2>&1; then
  echo "install-deps: pip install --no-deps mkl"
  "$PYTHON" -m pip install -q --no-deps "mkl>=2025,<2027"
fi
echo "install-deps: ok"
