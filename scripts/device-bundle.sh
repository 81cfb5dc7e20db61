#!/usr/bin/env bash
# Builds the device bundle: a self-contained folder (and .tar.xz) to run GT's GPU tests, Python
# scripts and benchmarks on a machine that has a GPU, its driver, a C++ compiler and a Python
# with NumPy, but no LLVM, Cap'n Proto or BLAS:
#   bin/gt-worker, bin/gt-dispatcher  (LLVM/MLIR linked statically; -DGT_STATIC_LLVM=ON)
#   bin/gt-unit-tests                 (GoogleTest: the CUDADevice.* tests run where a GPU is)
#   lib/                              (the other shared libraries they need, from this machine)
#   cuda/nvvm/libdevice/libdevice.10.bc (the GPU kernel compiler links it; the worker finds it here)
#   client/                           (to build gt._C there: GT's client core as static libraries,
#                                      their headers and Cap'n Proto's, the pybind11 sources of
#                                      gt._C, and pybind11's headers for a Python without pybind11)
#   pydeps/                           (pytest and what it needs: pure Python, any Python 3)
#   python/, test/, benchmarks/, examples/, scripts/  (the package and what runs on it; examples/
#                                      holds char_gpt's corpus, jargon.txt.gz)
#   run.sh, build-extension.sh        (scripts/bundle/: run a program, or Python with the bundle's
#                                      gt package, building gt._C for that Python on first use)
# The GPU's own libcuda.so.1 and libcublas come from the target machine at run time.
# Usage: scripts/device-bundle.sh [out-dir]   (default dist/gt-device-bundle); see docs/gpu.md.
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-dist/gt-device-bundle}
build=build-static

# OpenBLAS, not MKL: MKL's libraries (about 400 MB) would not fit the 64 MiB upload.
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DGT_STATIC_LLVM=ON -DGT_BLAS=openblas >/dev/null
ninja -C "$build" gt-worker gt-dispatcher gt-unit-tests GTClient GTTransport GTCore

rm -rf "$out"
mkdir -p "$out/bin" "$out/lib" "$out/cuda/nvvm/libdevice"
cp "$build/tools/gt-worker/gt-worker" "$build/tools/gt-dispatcher/gt-dispatcher" \
   "$build/test/unit/gt-unit-tests" "$out/bin/"
strip "$out/bin/"*
cp /usr/local/cuda/nvvm/libdevice/libdevice.10.bc "$out/cuda/nvvm/libdevice/"
# Shared libraries that are not part of every Linux (glibc, libstdc++, libgcc stay).
for bin in "$out/bin/"*; do
  ldd "$bin" | awk '/=> \//{print $3}'
done | sort -u | while read -r lib; do
  case "$(basename "$lib")" in
    libc.so*|libm.so*|libstdc++.so*|libgcc_s.so*|ld-linux*|libpthread.so*|libdl.so*|librt.so*) ;;
    *) cp -L "$lib" "$out/lib/" ;;
  esac
done
cp -r python test benchmarks examples "$out/"
cp /usr/share/doc/jargon-text/jargon.txt.gz "$out/examples/" # char_gpt's corpus (run.sh: GT_CHAR_CORPUS)
mkdir -p "$out/scripts" && cp scripts/gpu-proof.sh "$out/scripts/"
rm -f "$out"/python/gt/_C*.so "$out"/python/gt/bin
# gt._C, built on the target for its Python: GT's client core, headers, sources.
mkdir -p "$out/client/lib" "$out/client/include/gt/Transport" "$out/client/src" "$out/client/pybind11"
cp "$build/lib/Client/libGTClient.a" "$build/lib/Transport/libGTTransport.a" "$build/lib/Core/libGTCore.a" \
   "$out/client/lib/"
cp -r include/gt/Client include/gt/Core "$out/client/include/gt/"
cp "$build"/include/gt/Core/*.inc "$out/client/include/gt/Core/" # the generated op table (ops/*.yaml)
cp include/gt/Transport/*.h "$build/include/gt/Transport/gt.capnp.h" "$out/client/include/gt/Transport/"
cp -r /usr/include/capnp /usr/include/kj "$out/client/include/"
# Cap'n Proto 0.9's blob.h compares `const char* == StringPtr`, which C++20 compilers newer than
# this machine's GCC 12 reject (GCC 13, Clang 19; the GPU machine has GCC 13): compare StringPtrs.
sed -i 's/return a \([!=]\)= b.asString();/return kj::StringPtr(a) \1= b.asString();/' "$out/client/include/capnp/blob.h"
cp python/src/*.cpp "$out/client/src/"
cp -r "$(python3 -c 'import pybind11; print(pybind11.get_include())')/pybind11" "$out/client/pybind11/"
for lib in capnp-rpc capnp kj-tls kj-async kj; do # gt._C links them as shared libraries from lib/
  cp -L "$(ls /usr/lib/x86_64-linux-gnu/lib$lib-[0-9]*.so | head -n 1)" "$out/lib/"
done
# pytest for a Python without it (pure Python packages).
mkdir -p "$out/pydeps"
for package in pytest _pytest pluggy iniconfig packaging; do
  cp -r "$(python3 -c "import $package, os; print(os.path.dirname($package.__file__))")" "$out/pydeps/"
done
cp scripts/bundle/run.sh scripts/bundle/build-extension.sh "$out/"
find "$out" -name __pycache__ -prune -exec rm -rf {} +
tar -C "$(dirname "$out")" -cJf "$out.tar.xz" "$(basename "$out")"
du -sh "$out" "$out.tar.xz"
echo "bundle: $out (upload $out.tar.xz; must stay under 64 MiB)"
