#!/usr/bin/env bash
# Builds the libFuzzer harnesses with clang in build-fuzz (every GT source with coverage and the
# address and undefined-behaviour sanitizers) and runs each for $GT_FUZZ_SECONDS (default 60)
# from the seeds in test/fuzz/corpus/<harness>. A crash fails the run and leaves its input in
# build-fuzz/artifacts/<harness>/; replay it with build-fuzz/test/fuzz/gt-fuzz-<harness> FILE.
set -euo pipefail
cd "$(dirname "$0")/../.."
seconds=${GT_FUZZ_SECONDS:-60}
build=build-fuzz
CC=clang-19 CXX=clang++-19 cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DGT_FUZZ=ON -DGT_BLAS=openblas \
  -DPython3_EXECUTABLE="$(command -v python3)" >/dev/null
cmake --build "$build" --target gt-fuzz-client-batch gt-fuzz-worker-program
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=0:detect_odr_violation=0}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1}
for harness in client-batch worker-program; do
  corpus="$build/corpus/$harness" artifacts="$build/artifacts/$harness"
  mkdir -p "$corpus" "$artifacts"
  cp test/fuzz/corpus/$harness/* "$corpus/"
  echo "fuzzing $harness for $seconds s"
  "$build/test/fuzz/gt-fuzz-$harness" -max_total_time="$seconds" -timeout=30 -rss_limit_mb=6144 \
    -artifact_prefix="$artifacts/" -print_final_stats=1 "$corpus" 2>&1 | grep -v "^#[0-9]" | tail -40
  test "${PIPESTATUS[0]}" -eq 0
done
