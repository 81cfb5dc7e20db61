#!/usr/bin/env bash
# Builds the device bundle: a self-contained folder (and .tar.xz) to run GT's GPU tests and
# benchmarks on a machine that has a GPU and its driver but no LLVM, Cap'n Proto or BLAS:
#   bin/gt-worker, bin/gt-dispatcher  (LLVM/MLIR linked statically; -DGT_STATIC_LLVM=ON)
#   bin/gt-unit-tests                 (GoogleTest: the CUDADevice.* tests run where a GPU is)
#   lib/                              (the other shared libraries they need, from this machine)
#   cuda/nvvm/libdevice/libdevice.10.bc (the GPU kernel compiler links it; the worker finds it here)
#   python/, test/, benchmarks/       (sources, for reference and for building the extension there)
#   run.sh                            (sets LD_LIBRARY_PATH and runs a command from bin/)
# The GPU's own libcuda.so.1 and libcublas come from the target machine at run time.
# Usage: scripts/device-bundle.sh [out-dir]   (default dist/gt-device-bundle); see docs/gpu.md.
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-dist/gt-device-bundle}
build=build-static

cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DGT_STATIC_LLVM=ON >/dev/null
ninja -C "$build" gt-worker gt-dispatcher gt-unit-tests

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
cp -r python test benchmarks "$out/"
cat > "$out/run.sh" <<'RUN'
#!/usr/bin/env bash
# ./run.sh gt-unit-tests --gtest_filter='CUDA*'   or   ./run.sh gt-worker --device cuda:0 -p PORT
here="$(cd "$(dirname "$0")" && pwd)"
export LD_LIBRARY_PATH="$here/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
cmd=$1; shift
exec "$here/bin/$cmd" "$@"
RUN
chmod +x "$out/run.sh"
tar -C "$(dirname "$out")" -cJf "$out.tar.xz" "$(basename "$out")"
du -sh "$out" "$out.tar.xz"
echo "bundle: $out (upload $out.tar.xz; must stay under 64 MiB)"
