#!/usr/bin/env bash
# Proves the device bundle's Python path without a GPU machine: unpacks the bundle into an empty
# folder and, in a mount namespace where this machine's Cap'n Proto (headers and libraries), LLVM,
# pybind11 and installed GT are hidden, builds gt._C from the bundle alone (build-extension.sh)
# and runs test/python/test_api.py with the bundle's package and binaries (CPU workers). First,
# Clang 19 checks that the extension's sources compile as the GPU machine's GCC 13 needs.
#   scripts/check-device-bundle.sh [dist/gt-device-bundle.tar.xz]      (needs root: unshare)
set -euo pipefail
cd "$(dirname "$0")/.."
bundle=$(realpath "${1:-dist/gt-device-bundle.tar.xz}")
work=$(mktemp -d)
tar -C "$work" -xJf "$bundle"
# The GPU machine compiles gt._C with GCC 13, stricter about C++20 than this machine's GCC 12
# (Cap'n Proto 0.9's headers needed a patch for it): Clang 19 is as strict, so the bundle's
# sources must pass it too.
if command -v clang++-19 >/dev/null; then
  for src in "$work"/gt-device-bundle/client/src/*.cpp; do
    clang++-19 -std=c++20 -fsyntax-only -I "$work/gt-device-bundle/client/include" \
      -isystem "$work/gt-device-bundle/client/pybind11" \
      -isystem "$(python3 -c 'import sysconfig; print(sysconfig.get_paths()["include"])')" "$src"
  done
fi
export work
export site=$(python3 -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
unshare --mount --fork bash -euo pipefail -c '
  empty=$(mktemp -d)
  pybind11=$(python3 -c "import pybind11, os; print(os.path.dirname(pybind11.__file__))")
  for dir in /usr/include/capnp /usr/include/kj /usr/lib/llvm-19 /usr/include/pybind11 "$pybind11" "$site/gt"; do
    if [ -e "$dir" ]; then mount --bind "$empty" "$dir"; fi
  done
  for file in /usr/lib/x86_64-linux-gnu/libcapnp*.so* /usr/lib/x86_64-linux-gnu/libkj*.so* "$site"/_editable_*gt*; do
    if [ -f "$file" ]; then mount --bind /dev/null "$file"; fi
  done
  cd "$work/gt-device-bundle"
  ./run.sh python -c "import gt; assert gt.__file__.startswith(\"$work\"), gt.__file__; print(\"gt from\", gt.__file__, gt.ones(3).sum().item())"
  ./run.sh python -m pytest -q -p no:cacheprovider test/python/test_api.py
'
rm -rf "$work"
