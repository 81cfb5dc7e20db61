"""The JIT: hot regions fused and replayed by workers, checked against eager execution.

Each test runs a small script in a fresh process (own dispatcher and worker, own kernel cache)
so that JIT settings (GT_HOT_AFTER, GT_JIT_SYNC, GT_JIT_VERIFY, GT_JIT) and cache state are
under the test's control. GT_JIT_VERIFY=1 makes the worker rerun every fused replay op by op
and count outputs that differ by even one bit (`region_verify_failures`).
"""
import json
import os
import subprocess
import sys
import textwrap

import pytest

from conftest import ROOT

# A fixed random program over broadcasting shapes: elementwise ops, where, reductions with
# keepdims, transposes and scalars; run `steps` times so its regions repeat.
RANDOM_PROGRAM = """
import gt, numpy as np, random, json, sys
seed, steps, length = map(int, sys.argv[1:4])
rng = np.random.default_rng(seed)
shapes = [(8, 5), (5,), (1, 5), (8, 1), ()]
pool = [gt.tensor(rng.standard_normal(s).astype(np.float32)) for s in shapes for _ in range(2)]
results = []
for step in range(steps):
    random.seed(seed)
    vals = list(pool)
    for k in range(length):
        a, b, r = random.choice(vals), random.choice(vals), random.random()
        try:
            if r < 0.2: v = a + b
            elif r < 0.35: v = a * b
            elif r < 0.45: v = a - 0.5
            elif r < 0.55: v = a.relu()
            elif r < 0.6: v = a.tanh()
            elif r < 0.65: v = a.sigmoid()
            elif r < 0.75 and a.ndim: v = a.sum(axis=-1, keepdims=random.random() < 0.5)
            elif r < 0.8 and a.ndim: v = a.amax(0)
            elif r < 0.85 and a.ndim == 2: v = a.T
            elif r < 0.9: v = gt.where(a > b, a, b)
            else: v = a.mean()
        except ValueError:
            continue
        vals.append(v)
    results.append(float(vals[-1].sum().item()))
stats = gt.debug.stats()
print(json.dumps({"results": results, "stats": stats}))
"""

MLP_STEPS = """
import gt, numpy as np, json, sys
steps = int(sys.argv[1])
gt.manual_seed(0)
rng = np.random.default_rng(0)
x = rng.standard_normal((64, 784)).astype(np.float32)
y = rng.integers(0, 10, 64)
model = gt.nn.Sequential(gt.nn.Linear(784, 256), gt.nn.ReLU(), gt.nn.Linear(256, 10))
opt = gt.optim.Adam(model.parameters(), lr=1e-3)
losses = []
for step in range(steps):
    loss = gt.nn.functional.cross_entropy(model(gt.tensor(x)), gt.tensor(y))
    opt.zero_grad()
    loss.backward()
    opt.step()
    losses.append(loss.item())
print(json.dumps({"results": losses, "stats": gt.debug.stats()}))
"""


def run_script(source, args, tmp_path, **env):
    path = tmp_path / "script.py"
    path.write_text(textwrap.dedent(source))
    full_env = dict(os.environ, GT_CACHE_DIR=str(tmp_path / "cache"), GT_HOT_AFTER="1", GT_JIT_SYNC="1",
                    PYTHONPATH=os.path.join(ROOT, "python"))
    full_env.update(env)
    out = subprocess.run([sys.executable, str(path), *map(str, args)], capture_output=True, text=True,
                         env=full_env, timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    return json.loads(out.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_random_programs_fused_equal_eager_bit_for_bit(seed, tmp_path):
    fused = run_script(RANDOM_PROGRAM, [seed, 3, 30], tmp_path, GT_JIT_VERIFY="1")
    s = fused["stats"]
    assert s["region_replays"] >= 3 and s["fused_ops"] > 30, s
    assert s["region_verify_failures"] == 0, s
    eager = run_script(RANDOM_PROGRAM, [seed, 3, 30], tmp_path, GT_JIT="0")
    assert eager["stats"]["fused_ops"] == 0 and eager["stats"]["regions_formed"] == 0
    assert fused["results"] == eager["results"]


def test_mlp_training_fused_matches_eager_and_reaches_steady_state(tmp_path):
    fused = run_script(MLP_STEPS, [6], tmp_path, GT_JIT_VERIFY="1")
    eager = run_script(MLP_STEPS, [6], tmp_path, GT_JIT="0")
    s = fused["stats"]
    assert s["region_verify_failures"] == 0, s
    assert s["region_fallbacks"] == 0, s["notes"]
    assert fused["results"] == eager["results"]
    # Steady state: more steps add replays but no compiles.
    longer = run_script(MLP_STEPS, [12], tmp_path)
    t = longer["stats"]
    assert t["kernels_compiled"] == 0, "everything came from the disk cache"
    assert t["region_replays"] > s["region_replays"]
    # The forward bias+relu, the loss, the backward masks and the Adam updates are fused:
    # most ops run inside fused kernels (the rest: uploads, matmuls, the first step's sightings).
    assert t["fused_ops"] > t["eager_ops"], t


def test_second_process_compiles_nothing(tmp_path):
    first = run_script(MLP_STEPS, [3], tmp_path)
    assert first["stats"]["kernels_compiled"] > 0 and first["stats"]["regions_compiled"] > 0
    second = run_script(MLP_STEPS, [3], tmp_path)
    s = second["stats"]
    assert s["kernels_compiled"] == 0 and s["cache_misses"] == 0, s
    assert s["kernel_disk_hits"] >= first["stats"]["kernels_compiled"], s
    assert s["regions_compiled"] == first["stats"]["regions_compiled"]
    assert second["results"] == first["results"]


def test_background_compile_swaps_in(tmp_path):
    # Default settings: hot after 2 sightings, compiled on the worker's background thread.
    out = run_script(MLP_STEPS, [60], tmp_path, GT_HOT_AFTER="2", GT_JIT_SYNC="0")
    s = out["stats"]
    assert s["regions_compiled"] > 0 and s["region_replays"] > 0, s
    assert s["regions_marked_hot"] < s["regions_formed"], "the first sightings are not hot"


def test_a_chain_with_more_inputs_than_a_kernel_takes_is_cut_into_regions(tmp_path):
    # 70 distinct inputs: more kernel arguments than a fused kernel takes (64). gt-mark-hot-regions
    # cuts the chain into regions that fit, which compile and replay (before, the one region
    # fell back to eager ops; the fallback itself is tested in ExecutorTest.cpp).
    source = """
    import gt, numpy as np, json
    xs = [gt.tensor(np.full(4, float(i), np.float32)) for i in range(70)]
    totals = []
    for step in range(3):
        t = xs[0] * 1.0
        for x in xs[1:]:
            t = t + x
        totals.append(float(t.sum().item()))
    print(json.dumps({"results": totals, "stats": gt.debug.stats()}))
    """
    out = run_script(source, [], tmp_path)
    assert out["results"] == [4.0 * sum(range(70))] * 3
    s = out["stats"]
    assert s["region_fallbacks"] == 0 and not s["notes"], s
    assert s["regions_compiled"] >= 2 and s["region_replays"] >= 2, s
