#!/usr/bin/env bash
# Records the fuzzers' seeds (test/fuzz/corpus) from real runs: the Fashion-MNIST MLP, the
# character GPT with small sizes, and the sharding test jobs (data, tensor and pipeline parallel)
# run with GT_RECORD, which makes the dispatcher write every client batch and worker program it
# handles. Keeps up to 24 distinct messages of at most 384 KiB per harness, spread over sizes.
# Run it after a change to the wire format or the passes; commit what it writes.
set -euo pipefail
cd "$(dirname "$0")/.."
rec=$(mktemp -d)
run() { # a folder per run: each run's dispatcher numbers its sessions from 0
  mkdir -p "$rec/$1"
  GT_RECORD="$rec/$1" "${@:2}" >/dev/null
}
run mlp python3 examples/fashion_mnist.py --epochs 1 --limit 512
run gpt python3 examples/char_gpt.py --steps 3 --batch-size 4 --block-size 16 --embd 32 --layers 1 --heads 2 \
  --eval-every 2 --sample 0
for job in data_parallel tensor_parallel pipeline; do
  run $job python3 test/python/sharding/job.py $job 2 --config test/python/sharding/$job.yaml
done
python3 - "$rec" <<'PY'
import hashlib, os, shutil, sys
rec = sys.argv[1]
for name, prefix in (("client-batch", "client"), ("worker-program", "worker")):
    out = os.path.join("test/fuzz/corpus", name)
    shutil.rmtree(out, ignore_errors=True)
    os.makedirs(out)
    files, seen = [], set()
    for run in sorted(os.listdir(rec)):
      for f in sorted(os.listdir(os.path.join(rec, run))):
        data = open(os.path.join(rec, run, f), "rb").read()
        digest = hashlib.sha1(data).hexdigest()
        if f.startswith(prefix) and len(data) <= 384 << 10 and digest not in seen:
            seen.add(digest)
            files.append((len(data), digest, data))
    files.sort()
    keep = files if len(files) <= 24 else [files[i * (len(files) - 1) // 23] for i in range(24)]
    for size, digest, data in keep:
        open(os.path.join(out, digest[:16]), "wb").write(data)
    print(f"{name}: {len(keep)} seeds of {len(files)} distinct messages")
PY
rm -rf "$rec"
