#!/usr/bin/env bash
# The GPU proof: one command that checks GT on a GPU machine in 10-11 minutes (the device tool
# stops a command at 10: run it as two --only calls), from the unpacked device bundle
# (scripts/device-bundle.sh; docs/gpu.md) or from a built checkout:
#
#   scripts/gpu-proof.sh [--dry-run] [--only STEP,STEP] [OUT]   (OUT: default $OUT, else ./gpu-proof)
#
# Each step writes OUT/logs/<step>.log, and OUT/logs.tgz packs them at the end (the device tool
# brings back at most 8 files: remove OUT/logs there); OUT/summary.md says what passed, failed or
# was skipped (and why), and how long each step took. The steps:
#   nvidia-smi      the GPU and its driver
#   cuda-gtests     the CUDA GoogleTests: CUDADevice.*, CUDAKernels.*, CachingAllocator.*, NCCL.*
#   python-cuda     on a CUDA worker: test_api.py (the op harness), test_nn.py, test_char_gpt.py,
#                   test_cuda.py (an MLP trained on the GPU against the CPU worker), test_errors.py
#                   (bad input, and the kernels' run-time checks: gt-gpu-runtime-errors)
#   nccl            CUDA workers on one GPU: the sharded op sweep and the data-, tensor- and
#                   pipeline-parallel jobs of test_distributed.py, each against one worker. NCCL
#                   refuses two ranks on one GPU, so these groups go through Gloo, staging device
#                   memory through the host (RoutedCommunicator.cpp); NCCL itself runs in the
#                   cuda-gtests (a one-member group). Between GPUs it needs a machine with two.
#   jit-bench       benchmarks/jit.py on the GPU
#   vs-torch        benchmarks/vs_torch.py: per-op overhead, the fused chain, the MLP and GPT
#                   steps, beside PyTorch eager and torch.compile on the same GPU (not its CNN
#                   workloads, added in session 43 and never timed on a GPU: the step keeps the
#                   300 s it was sized for)
#   reductions      benchmarks/reductions.py: a full sum, row and column sums, softmax, beside
#                   PyTorch eager on the same GPU
#   cuda-graphs     benchmarks/cuda_graphs.py: the worker's host time per region replay, with and
#                   without CUDA graphs, in the MLP and GPT steps
#   gpt2            benchmarks/gpt2.py: a GPT-2 124M training step (bfloat16 autocast) in tokens/s,
#                   beside PyTorch eager and torch.compile on the same GPU
#   first-batch     vs_torch.py's MLP and GPT steps and gpt2.py, GT alone, with GT_FIRST_BATCH_SIZE=128
#                   (the GPU starts on a step while the client issues the rest of it)
#   trace           a Perfetto trace (gt.profiler: client, dispatcher and workers) of two GPT steps,
#                   OUT/gpt-steps.trace.json; trace-summary: `gt trace summary` of it
# --dry-run: the same steps on CPU workers (GT_DEVICE=cpu), skipping the GPU-only ones; `make
# test` runs it, so the proof cannot rot. --only: just the steps named (a GPU run that continues
# where an earlier one stopped). Exits 1 if a step failed.
set -uo pipefail
dry=0
only=""
while [ $# -gt 0 ]; do
  case "$1" in
    --dry-run) dry=1; shift ;;
    --only) only=",$2,"; shift 2 ;;
    -h|--help) sed -n '2,/^set -uo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    -*) echo "gpu-proof.sh: unknown option $1 (--help lists them)" >&2; exit 2 ;;
    *) break ;;
  esac
done
root="$(cd "$(dirname "$0")/.." && pwd)"
out="$(mkdir -p "${1:-${OUT:-gpu-proof}}" && cd "${1:-${OUT:-gpu-proof}}" && pwd)"
cd "$root"
if [ -x "$root/run.sh" ]; then # the device bundle
  python=("$root/run.sh" python)
  gtests=("$root/run.sh" gt-unit-tests)
else # a built checkout
  python=("${PYTHON:-python3}")
  gtests=("$root/build/test/unit/gt-unit-tests")
fi
device=cuda
[ $dry = 1 ] && device=cpu
export GT_DEVICE=$device
summary="$out/summary.md"
mkdir -p "$out/logs"
{
  echo "# GPU proof $(date -u '+%Y-%m-%d %H:%M UTC')$([ $dry = 1 ] && echo ' (dry run: CPU workers)')"
  echo
  echo "| step | result | seconds | log |"
  echo "|---|---|---|---|"
} >"$summary"
failed=0

# step NAME LIMIT_SECONDS COMMAND...: runs it with a time limit, records the result.
step() {
  local name=$1 limit=$2
  shift 2
  if [ -n "$only" ] && [[ "$only" != *",$name,"* ]]; then
    skip "$name" "not in --only"
    return
  fi
  local log="$out/logs/$name.log" start=$SECONDS result
  echo "== $name: $*" | tee "$log"
  if timeout --kill-after=10 "$limit" "$@" >>"$log" 2>&1; then
    result=passed
  else
    local code=$?
    result="FAILED (exit $code$([ $code = 124 ] && echo ", over $limit s"))"
    failed=1
  fi
  echo "| $name | $result | $((SECONDS - start)) | logs/$name.log |" >>"$summary"
  echo "   $result ($((SECONDS - start)) s)"
}

skip() {
  echo "| $1 | skipped: $2 | 0 | |" >>"$summary"
  echo "== $1: skipped ($2)"
}

if [ $dry = 1 ]; then
  skip nvidia-smi "dry run"
else
  step nvidia-smi 30 nvidia-smi
fi
# Without a GPU the CUDA device tests skip themselves (with the reason); the PTX checks run.
step cuda-gtests 150 "${gtests[@]}" --gtest_filter='CUDADevice.*:CUDAKernels.*:CachingAllocator.*:NCCL.*'
# (test_cuda.py's own run of these files on the GPU would repeat them: -k leaves it out.)
step python-cuda 360 "${python[@]}" -m pytest -q -p no:cacheprovider test/python/test_api.py \
  test/python/test_nn.py test/python/test_char_gpt.py test/python/test_cuda.py test/python/test_errors.py \
  -k "not api_harness"
# GT_DEVICE=cuda:0 puts every auto-started worker of each job on the one GPU.
[ $dry = 1 ] || export GT_DEVICE=cuda:0
step nccl 150 "${python[@]}" -m pytest -q -x -p no:cacheprovider test/python/test_distributed.py \
  -k "ops_on_split or test_data_parallel or test_tensor_parallel or test_pipeline"
export GT_DEVICE=$device
step jit-bench 120 "${python[@]}" benchmarks/jit.py --iters $([ $dry = 1 ] && echo 3 || echo 30)
# GT beside PyTorch eager and torch.compile on the same GPU (the dry run: GT alone, few iterations;
# PyTorch is not a GT dependency).
if [ $dry = 1 ]; then
  step vs-torch 240 "${python[@]}" benchmarks/vs_torch.py --only gt --quick --workloads per-op,item,chain,mlp,gpt
else
  step vs-torch 300 "${python[@]}" benchmarks/vs_torch.py --workloads per-op,item,chain,mlp,gpt
fi
# Reductions (block-parallel on the GPU: gt-gpu-reductions) beside PyTorch eager.
if [ $dry = 1 ]; then
  step reductions 120 "${python[@]}" benchmarks/reductions.py --only gt --iters 1
else
  step reductions 120 "${python[@]}" benchmarks/reductions.py
fi
# CUDA graphs: the worker's host time per hot-region replay, graphs off and on (on CPU workers
# both columns run the same code).
step cuda-graphs 180 "${python[@]}" benchmarks/cuda_graphs.py --steps $([ $dry = 1 ] && echo 2 || echo 20)
# GPT-2 124M in bfloat16 beside PyTorch (the dry run: a tiny model, GT alone). Three warm-up steps:
# GT's last hot regions compile in the third step (with two, the timed steps still compiled).
if [ $dry = 1 ]; then
  step gpt2 120 "${python[@]}" benchmarks/gpt2.py --tiny --only gt --warmup 1 --steps 1
else
  step gpt2 300 "${python[@]}" benchmarks/gpt2.py --warmup 3 --steps 3
fi
# The same with the first batch after each read cut at 128 ops (GT_FIRST_BATCH_SIZE): whether the
# GPU starts on a step while the client issues the rest of it (off by default: on the 2-core
# development machine it costs more than it gains).
if [ $dry = 1 ]; then
  step first-batch 120 env GT_FIRST_BATCH_SIZE=128 "${python[@]}" benchmarks/gpt2.py --tiny --only gt --warmup 1 --steps 1
else
  step first-batch 200 bash -c 'GT_FIRST_BATCH_SIZE=128 "$@" benchmarks/vs_torch.py --only gt --workloads mlp,gpt &&
    GT_FIRST_BATCH_SIZE=128 "$@" benchmarks/gpt2.py --only gt --warmup 3 --steps 3' _ "${python[@]}"
fi
# The timeline of two GPT steps (gt.profiler: the client, the dispatcher and each worker on one
# clock), and where the time went (the top kernels: which eager ops or regions are slow there).
step trace 180 env GT_TRACE="$out/gpt-steps.trace.json" "${python[@]}" examples/char_gpt.py --steps 2 --sample 0 \
  --eval-every 1000
step trace-summary 30 "${python[@]}" -m gt trace summary "$out/gpt-steps.trace.json"
tar -C "$out" -czf "$out/logs.tgz" logs
echo
cat "$summary"
exit $failed
