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

import numpy as np
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


# Reductions over rows long enough for gt-cpu-reductions' vector partials (8 lanes), with a tail
# (37, 100, 1000 columns) and without (8), over floats, bools (a mask: 1 byte per element in
# memory, 1 bit per lane in a vector) and keepdims, compared with NumPy; run 3 times so the
# chain is a hot region.
REDUCTIONS_PROGRAM = """
import gt, numpy as np, json
rng = np.random.default_rng(0)
out = {}
for cols in (7, 8, 37, 100, 1000):
    a = rng.standard_normal((6, cols)).astype(np.float32)
    m = rng.random((6, cols)) > 0.5
    x, mask = gt.tensor(a), gt.tensor(m)
    for step in range(3):
        s = gt.where(mask, x, -1.0).exp().sum(-1, keepdims=True)
        vals = [s, (x * 2.0).amax(-1), mask.sum(-1), x.sum(), (x * x).mean(-1)]
        vals = [v.numpy() for v in vals]
    expect = [np.exp(np.where(m, a, -1.0)).sum(-1, keepdims=True), (a * 2).max(-1), m.sum(-1), a.sum(),
              (a * a).mean(-1)]
    for v, e in zip(vals, expect):
        assert v.shape == e.shape and np.allclose(v, e, rtol=1e-5, atol=1e-4), (cols, v, e)
    out[cols] = [v.tolist() for v in vals]
print(json.dumps({"results": out, "stats": gt.debug.stats()}))
"""


def test_row_reductions_match_numpy_and_fused_equal_eager_bit_for_bit(tmp_path):
    fused = run_script(REDUCTIONS_PROGRAM, [], tmp_path, GT_JIT_VERIFY="1")
    s = fused["stats"]
    assert s["region_replays"] >= 5 and s["region_verify_failures"] == 0, s
    eager = run_script(REDUCTIONS_PROGRAM, [], tmp_path, GT_JIT="0")
    assert fused["results"] == eager["results"]


# Reductions over several axes whose fused input is broadcast along some of them (`(x + b).sum()`
# with b a row vector, a mean over the last two axes of `x * s`): the fused kernel cannot read
# the reduced elements as one row, as the eager sum of the materialized `x + b` does. Widths that
# are multiples of 8 (16, 24) take vector loops, the others (5, 37) carry one element at a time;
# both must add in the eager kernel's order.
BROADCAST_REDUCTIONS = """
import gt, numpy as np, json
rng = np.random.default_rng(0)
out = {}
for shape in ((6, 5), (9, 16), (40, 37), (3, 4, 24)):
    a = rng.standard_normal(shape).astype(np.float32)
    bias = rng.standard_normal(shape[-1]).astype(np.float32)
    scale = rng.standard_normal(shape[:-2] + (1, 1)).astype(np.float32)
    x, b, s = gt.tensor(a), gt.tensor(bias), gt.tensor(scale)
    for step in range(3):
        vals = [(x + b).exp().sum(), ((x - b) * (x - b)).mean(), (x * s).mean((-2, -1)), (x + b).amax()]
        vals = [v.numpy() for v in vals]
    expect = [np.exp(a + bias).sum(), ((a - bias) ** 2).mean(), (a * scale).mean((-2, -1)), (a + bias).max()]
    for v, e in zip(vals, expect):
        assert v.shape == np.shape(e) and np.allclose(v, e, rtol=1e-5, atol=1e-5), (shape, v, e)
    out[str(shape)] = [np.asarray(v).tolist() for v in vals]
print(json.dumps({"results": out, "stats": gt.debug.stats()}))
"""


def test_broadcast_full_reductions_fused_equal_eager_bit_for_bit(tmp_path):
    fused = run_script(BROADCAST_REDUCTIONS, [], tmp_path, GT_JIT_VERIFY="1")
    s = fused["stats"]
    assert s["region_replays"] >= 8 and s["region_verify_failures"] == 0, s
    eager = run_script(BROADCAST_REDUCTIONS, [], tmp_path, GT_JIT="0")
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


# Cross-entropy forward and backward over many classes, some targets ignored: the fused loss
# region computes the picked log-probabilities from the logits at the targets, recomputes the
# one-hot gradient inside the gradient's loop and sums its source instead of the one-hot
# (gt-fold-extracts, gt-duplicate-broadcasts, the one-hot scatter_add lowering); it must equal
# the eager ops bit for bit and NumPy's formula.
CROSS_ENTROPY_STEPS = """
import gt, numpy as np, json
rng = np.random.default_rng(0)
logits = rng.standard_normal((37, 300)).astype(np.float32)
target = rng.integers(0, 300, 37)
target[::5] = -100
out = []
for step in range(4):
    x = gt.tensor(logits * (1 + step), requires_grad=True)
    loss = gt.nn.functional.cross_entropy(x, gt.tensor(target), ignore_index=-100)
    loss.backward()
    out.append([loss.item(), x.grad.numpy().tolist()])
print(json.dumps({"results": out, "stats": gt.debug.stats()}))
"""


def test_cross_entropy_region_equals_eager_and_numpy(tmp_path):
    fused = run_script(CROSS_ENTROPY_STEPS, [], tmp_path, GT_JIT_VERIFY="1")
    s = fused["stats"]
    assert s["region_replays"] >= 2 and s["region_verify_failures"] == 0, s
    eager = run_script(CROSS_ENTROPY_STEPS, [], tmp_path, GT_JIT="0")
    assert fused["results"] == eager["results"]
    rng = np.random.default_rng(0)
    logits = rng.standard_normal((37, 300)).astype(np.float64)
    target = rng.integers(0, 300, 37)
    target[::5] = -100
    keep = target != -100
    for step, (loss, grad) in enumerate(fused["results"]):
        x = logits * (1 + step)
        p = np.exp(x - x.max(1, keepdims=True))
        p /= p.sum(1, keepdims=True)
        rows = np.nonzero(keep)[0]
        expect_loss = -np.log(p[rows, target[rows]]).mean()
        expect_grad = p * keep[:, None]
        expect_grad[rows, target[rows]] -= 1
        expect_grad /= keep.sum()
        assert np.isclose(loss, expect_loss, rtol=1e-5)
        assert np.allclose(grad, expect_grad, atol=1e-6)


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


# Runs step(a) for the first argument a, then the rest, and prints the kernels compiled or
# loaded from disk by the rest (with the stats) as JSON.
AFTER_FIRST = """
import gt, json
def new_kernels_after_first(step, args):
    def kernels():
        s = gt.debug.stats()
        return s["kernels_compiled"] + s["kernel_disk_hits"]
    args = iter(args)
    step(next(args))
    before = kernels()
    for a in args:
        step(a)
    print(json.dumps({"new": kernels() - before, "stats": gt.debug.stats()}))
"""


# Each op kind once (warm-up), then 50 new offsets, integer indices and shapes of it: on a CPU
# worker element moves (slice, slice_scatter, transpose, broadcast_to, concat) run as strided
# copies, so none of the 50 compiles (or loads) a kernel. Every value is checked against NumPy.
NEW_OFFSETS = AFTER_FIRST + """
import gt, numpy as np, json, sys
rng = np.random.default_rng(0)
data_np = rng.standard_normal(4096).astype(np.float32)
grid_np = rng.standard_normal((40, 30)).astype(np.float32)
data, grid = gt.tensor(data_np), gt.tensor(grid_np)
def step(i):
    rows = 1 + i % 7                                          # a new window size too
    got = [data[i:i + 64].numpy(), data[i].numpy(), grid[i % 40].numpy(), grid[i % 13:, i % 30::3].numpy(),
           gt.stack([data[j:j + 16] for j in (i, 3 * i, 7 * i)]).numpy(), grid[:rows].T.numpy(),
           gt.broadcast_to(grid[i % 40:i % 40 + 1], (rows, 30)).numpy(), gt.cat([grid[:rows], grid[i % 5:i % 5 + 2]]).numpy()]
    want = [data_np[i:i + 64], data_np[i], grid_np[i % 40], grid_np[i % 13:, i % 30::3],
            np.stack([data_np[j:j + 16] for j in (i, 3 * i, 7 * i)]), grid_np[:rows].T,
            np.broadcast_to(grid_np[i % 40:i % 40 + 1], (rows, 30)), np.concatenate([grid_np[:rows], grid_np[i % 5:i % 5 + 2]])]
    for g, w in zip(got, want):
        assert g.shape == w.shape and np.array_equal(g, w), (i, g, w)
    x = gt.zeros(50)
    x[i % 40:i % 40 + 5] = gt.ones(5)                         # slice_scatter
    w = np.zeros(50, np.float32); w[i % 40:i % 40 + 5] = 1
    assert np.array_equal(x.numpy(), w)
new_kernels_after_first(step, range(1, 52))
"""


def test_new_slice_offsets_indices_and_window_sizes_compile_no_kernel(tmp_path):
    out = run_script(NEW_OFFSETS, [], tmp_path, GT_JIT="0")
    assert out["new"] == 0, out["stats"]
    assert out["stats"]["kernels_compiled"] > 0  # the first round did compile (it ran here)


# The same for batch sizes: on a CPU worker eager elementwise kernels and reductions take their
# sizes at run time (memref<?x...>; a broadcast axis stays a static 1), index_select any number
# of indices (an embedding of a sequence one token longer each step), and fills are host fills,
# so 50 new batch sizes compile nothing after the first. Checked against NumPy, several dtypes.
NEW_BATCH_SIZES = AFTER_FIRST + """
import gt, numpy as np, json
rng = np.random.default_rng(0)
w_np = rng.standard_normal(8).astype(np.float32)
w = gt.tensor(w_np)
table_np = rng.standard_normal((65, 8)).astype(np.float32)
table = gt.tensor(table_np)
def step(n):
    x_np = rng.standard_normal((n, 8)).astype(np.float32)
    k_np = rng.integers(-5, 5, (n, 1)).astype(np.int64)
    x, k = gt.tensor(x_np), gt.tensor(k_np)
    h = (x * w + 1.5).relu()
    h_np = np.maximum(x_np * w_np + 1.5, 0)
    got = [h, h.sum(1), h.mean(0, keepdims=True), h.amax(1, keepdim=True), (h > 0.5), gt.where(h > 1, h, -h).sum(),
           k * 3 + k, (k % 3).sum(0), gt.ones(n, 3), gt.zeros(n, dtype=gt.int64), x.exp().log().tanh() - x.tanh(),
           table.index_select(0, k.reshape(-1) + 5), gt.nn.functional.embedding(k.reshape(1, -1) + 5, table)]
    want = [h_np, h_np.sum(1), h_np.mean(0, keepdims=True), h_np.max(1, keepdims=True), h_np > 0.5,
            np.where(h_np > 1, h_np, -h_np).sum(), k_np * 3 + k_np, (k_np % 3).sum(0), np.ones((n, 3)),
            np.zeros(n, np.int64), np.zeros((n, 8)), table_np[k_np.reshape(-1) + 5], table_np[k_np.reshape(1, -1) + 5]]
    for g, e in zip(got, want):
        a = g.numpy()
        assert a.shape == np.shape(e) and np.allclose(a, e, atol=1e-5, rtol=1e-5), (n, a, e)
new_kernels_after_first(step, range(3, 54))
"""


def test_new_batch_sizes_compile_no_eager_kernel(tmp_path):
    out = run_script(NEW_BATCH_SIZES, [], tmp_path, GT_JIT="0")
    assert out["new"] == 0, out["stats"]
    assert out["stats"]["kernels_compiled"] > 0


# Eager elementwise kernels see their operands with adjacent axes merged where every operand
# keeps or broadcasts both (a (512, 512, 3, 3) SGD update is one loop, not a nest whose innermost
# loop has 3 elements): shapes of one pattern share a kernel whatever their rank, and every
# broadcasting pattern still gives NumPy's values.
COALESCED = AFTER_FIRST + """
import gt, numpy as np
rng = np.random.default_rng(0)
def arr(*shape):
    return rng.standard_normal(shape).astype(np.float32)
def check(f, *arrays):
    got = f(*[gt.tensor(a) for a in arrays]).numpy()
    want = f(*arrays)
    assert got.shape == want.shape and np.allclose(got, want, rtol=1e-6, atol=1e-6), (got, want)
same = [(24,), (2, 3, 4), (2, 1, 3, 4), (1, 6, 1, 4, 1)]  # one shape everywhere: one loop
rows = [((6, 4), (6, 1)), ((2, 3, 4), (2, 3, 1)), ((2, 3, 1, 4), (2, 3, 1, 1))]  # a column broadcast along rows
def step(i):
    shape = same[i % len(same)]
    check(lambda x, y: x * y - 0.5, arr(*shape), arr(*shape))
    x, y = rows[i % len(rows)]
    check(lambda p, q: p + q, arr(*x), arr(*y))
new_kernels_after_first(step, range(0, 12))
# Broadcast patterns that merge partly or not at all, lower-rank and 0-d operands, size-1 axes.
for x, y in [((4, 5, 6, 7), (5, 1, 7)), ((4, 5, 6, 7), (1, 5, 6, 1)), ((4, 1, 6, 7), (1, 5, 6, 7)), ((3, 1, 1, 4), (4,)),
             ((2, 3, 4), ()), ((1, 1, 5), (1, 1, 1)), ((8, 1), (1, 8)), ((2, 1, 3, 1, 4), (2, 5, 3, 1, 4))]:
    check(lambda p, q: gt.where(p > q, p - q, p * q) if isinstance(p, gt.Tensor) else np.where(p > q, p - q, p * q),
          arr(*x), arr(*y))
    check(lambda p, q: (p + q) * 2, arr(*x), arr(*y))
# A 0-d operand keeps promoting as a number does (bfloat16 with a float32 0-d stays bfloat16), and
# a result of size-1 axes stays a tensor: autocast's masked_fill in char_gpt once failed to verify.
for shape in [(2, 3, 4), (1, 1), (4, 1, 1, 5)]:
    x = gt.tensor(arr(*shape)).to(gt.bfloat16)
    for out in (x * gt.tensor(2.0), gt.where(x > 0, x, gt.tensor(-1e4)), x + gt.tensor(arr(*shape)[..., :1]).to(gt.bfloat16)):
        assert out.dtype == gt.bfloat16 and out.shape == shape, (out.dtype, out.shape)
        out.numpy()
"""


def test_eager_elementwise_kernels_merge_axes(tmp_path):
    out = run_script(COALESCED, [], tmp_path, GT_JIT="0")
    assert out["new"] == 0, out["stats"]


# Batched matmuls of small matrices (attention's per-head products): their batch elements run
# on the worker's kernel threads, a whole GEMM each, so the results cannot depend on how many
# threads there are. Broadcast batches, transposed operands (.mT), float64 and bfloat16.
SMALL_BATCHED_MATMULS = """
import gt, numpy as np, json
rng = np.random.default_rng(0)
cases = [((32, 4, 64, 64), (32, 4, 64, 32), False, "float32"), ((128, 64, 32), (32, 64), False, "float32"),
         ((8, 64, 16), (8, 64, 16), True, "float32"), ((16, 40, 24), (1, 24, 40), False, "float64"),
         ((64, 32, 32), (64, 32, 32), False, "bfloat16"), ((3, 5, 7), (3, 7, 2), False, "float32"),
         ((40, 16, 24), (40, 16, 24), True, "float64")]
results, close = [], []
for sa, sb, t, dtype in cases:
    a_np, b_np = rng.standard_normal(sa), rng.standard_normal(sb)
    a, b = gt.tensor(a_np).to(getattr(gt, dtype)), gt.tensor(b_np).to(getattr(gt, dtype))
    y = a @ (b.mT if t else b)
    got = y.float().numpy().astype(np.float64)
    want = a_np @ (np.swapaxes(b_np, -1, -2) if t else b_np)
    close.append(bool(np.allclose(got, want, atol=0.1 if dtype == "bfloat16" else 1e-3, rtol=0.05 if dtype == "bfloat16" else 1e-4)))
    results.append(got.tolist())
print(json.dumps({"close": close, "results": results, "stats": gt.debug.stats()}))
"""


def test_small_batched_matmuls_split_over_threads_equal_one_thread(tmp_path):
    one = run_script(SMALL_BATCHED_MATMULS, [], tmp_path, GT_WORKER_THREADS="1")
    three = run_script(SMALL_BATCHED_MATMULS, [], tmp_path, GT_WORKER_THREADS="3")
    assert all(one["close"]) and all(three["close"]), (one["close"], three["close"])
    assert one["stats"]["matmuls_threaded_by_batch"] == 0
    # All but the two batches times one matrix ((128, 64, 32) @ (32, 64) and the first float64
    # case: each folds into A's rows, one GEMM on the BLAS threads) and 3 x 5x7x2 (too little
    # work to wake the threads).
    assert three["stats"]["matmuls_threaded_by_batch"] == 4, three["stats"]
    # With MKL, every batch of small GEMMs (all but the two folded cases) runs on JIT kernels,
    # float32 and float64, whatever the thread count: which GEMM runs depends on the shape alone.
    assert one["stats"]["matmuls_jit_gemm"] == three["stats"]["matmuls_jit_gemm"] in (0, 5), three["stats"]
    assert one["results"] == three["results"]


# Regions large enough for several threads (gt-cpu-parallel-loops): an elementwise chain with
# broadcasting, row and column reductions and a transpose over 64 x 96 x 32 elements, as
# fused kernels on one or three threads, verified bit for bit against op-by-op runs.
LARGE_REGIONS = """
import gt, numpy as np, json
rng = np.random.default_rng(0)
x_np = rng.standard_normal((64, 96, 32)).astype(np.float32)
b_np = rng.standard_normal(32).astype(np.float32)
z_np = rng.standard_normal((120, 300)).astype(np.float32)
c_np = rng.standard_normal(300).astype(np.float32)
x, b, z, c = gt.tensor(x_np), gt.tensor(b_np), gt.tensor(z_np), gt.tensor(c_np)
results = []
for step in range(3):
    h = (x * 1.5 + b).relu()
    outs = [h, h.sum(-1), h.sum((0, 1)), (h - h.mean(-1, keepdim=True)).transpose(0, 2) * 2.0,
            # row reductions between elementwise nests (one loop over row blocks), full sums
            gt.nn.functional.softmax(h * 0.5, dim=-1), gt.nn.functional.layer_norm(x, (32,)),
            h.sum(), (x * 0.5).exp().sum(), h.sum((1, 2)),
            # reductions over outer dimensions (bias gradients): parallel over the kept ones
            h.sum(0), (z * 2.0).sum(0), (z.exp() * z).sum(0),
            # full sums in blocks of 8192 elements on the threads, a broadcast operand inside
            # (vector loops: rows of 32; one element at a time: rows of 300)
            (x * b).sum(), (z * c).sum()]
    results = [o.numpy().tolist() for o in outs]
h_np = np.maximum(x_np * 1.5 + b_np, 0)
e_np = np.exp(h_np * 0.5 - (h_np * 0.5).max(-1, keepdims=True))
mu, var = x_np.mean(-1, keepdims=True), x_np.var(-1, keepdims=True)
want = [h_np, h_np.sum(-1), h_np.sum((0, 1)), (h_np - h_np.mean(-1, keepdims=True)).transpose(2, 1, 0) * 2.0,
        e_np / e_np.sum(-1, keepdims=True), (x_np - mu) / np.sqrt(var + 1e-5),
        h_np.sum(), np.exp(x_np * 0.5).sum(), h_np.sum((1, 2)),
        h_np.sum(0), (z_np * 2.0).sum(0), (np.exp(z_np) * z_np).sum(0), (x_np * b_np).sum(), (z_np * c_np).sum()]
close = [bool(np.allclose(np.array(r), w, atol=1e-4, rtol=1e-4)) for r, w in zip(results, want)]
print(json.dumps({"close": close, "stats": gt.debug.stats()}))
"""


@pytest.mark.parametrize("threads", [1, 3])
def test_large_fused_regions_run_on_the_workers_threads_as_eager(threads, tmp_path):
    # (64, 96, 32) elements: over the parallel threshold set here (the default is 2^20).
    out = run_script(LARGE_REGIONS, [], tmp_path, GT_JIT_VERIFY="1", GT_WORKER_THREADS=str(threads),
                     GT_JIT_PARALLEL_MIN="32768")
    s = out["stats"]
    assert all(out["close"]), out["close"]
    assert s["kernel_threads"] == threads, s  # gt-worker --threads N: OpenMP's threads too
    assert s["region_replays"] >= 2 and s["fused_ops"] > 10, s
    assert s["region_verify_failures"] == 0 and s["region_fallbacks"] == 0, (s, s["notes"])


# A region that keeps arriving at new sizes (pytorch/examples' actor_critic.py normalizes each
# episode's returns, one length per episode, and compiled 256 kernel sets in 40 episodes, most
# for a slice of them): at most 8 sizes of one family (the region's structure without sizes)
# are compiled; the others run op by op on eager kernels, which take any size. Values stay right.
# (A batch of a known program at a new size is first sent as it came, without the passes, and
# that plan reused; its 16th reuse runs the passes, which form the region: so 20 steps a size.)
NEW_SIZES_OF_ONE_REGION = """
import gt, numpy as np, json
out = []
for n in range(10, 30):
    r = np.arange(n, dtype=np.float32)
    for _ in range(20):  # direct, reused 15 times, the passes, then hot after its second sighting
        x = gt.tensor(r)
        y = ((x - x.mean()) / (x.std() + 1e-5) * 2.0).exp().sum()
        v = y.item()
    want = np.exp((r - r.mean()) / (r.std(ddof=1) + 1e-5) * 2.0).sum()
    assert abs(v - want) <= 1e-4 * abs(want), (n, v, want)
    out.append(v)
print(json.dumps({"results": out, "stats": gt.debug.stats()}))
"""


def test_a_region_at_ever_new_sizes_compiles_at_most_eight_of_them(tmp_path):
    s = run_script(NEW_SIZES_OF_ONE_REGION, [], tmp_path, GT_JIT_SYNC="1", GT_HOT_AFTER="2")["stats"]
    assert s["dispatcher_direct_batches"] >= 19, s  # each new size after the first, at first
    assert s["regions_formed"] >= 20, s  # each size's region, once its plan went through the passes
    assert 0 < s["regions_compiled"] <= 8, s
    assert s["regions_left_cold_by_size_cap"] >= 12, s  # 12 sizes past the cap, each seen hot-after times
    assert s["region_fallbacks"] == 0, s


# A batch of independent eager ops, each result dropped before the next is made (a loop
# `for _ in range(n): r = a * b`), ending in a fused region: the worker frees each result where
# the client did, so the batch holds two results at a time, not all of them (the frees used to
# follow the run's last region: 200 results of 2 MiB alive at once, each on fresh pages).
DROPPED_RESULTS = """
import gt, numpy as np, json
a_np = np.random.default_rng(0).standard_normal((32, 4, 64, 64)).astype(np.float32)
a, b = gt.tensor(a_np), gt.tensor(a_np * 2)
before = gt.debug.stats()["peak_bytes"]
for _ in range(200):
    r = a * b
value = float((r + 1).sum().item())
print(json.dumps({"value": value, "want": float((a_np * a_np * 2 + 1).astype(np.float64).sum()),
                  "before": before, "stats": gt.debug.stats()}))
"""


def test_results_dropped_in_a_batch_are_freed_where_the_client_dropped_them(tmp_path):
    out = run_script(DROPPED_RESULTS, [], tmp_path)
    assert out["value"] == pytest.approx(out["want"], rel=1e-4)
    mib = 2 ** 20
    assert out["before"] <= 4 * mib + 64  # a and b
    # a, b, the result being made and the one before it, the region's output: 5 x 2 MiB.
    assert out["stats"]["peak_bytes"] <= 12 * mib, out["stats"]["peak_bytes"] / mib


# Eager kernels (GT_JIT=0: no regions) take their sizes at run time; a loop nest large enough
# when it runs (here over 64 elements: GT_JIT_PARALLEL_MIN) splits its outer dimensions over the
# worker's threads, as fused kernels do (the kernel forks only when its sizes are large enough;
# a nest that can report an error, such as an integer remainder's division by zero, stays on
# one thread). Results match NumPy and are the same bits on one thread or three.
EAGER_PARALLEL = """
import gt, numpy as np, json
rng = np.random.default_rng(0)
x_np = rng.standard_normal((48, 40, 24)).astype(np.float32)
b_np = rng.standard_normal(24).astype(np.float32)
i_np = rng.integers(-9, 9, (300, 50)).astype(np.int32)
x, b, i = gt.tensor(x_np), gt.tensor(b_np), gt.tensor(i_np)
outs = [(x * 1.5 + b).relu(), x.exp(), x.sum(-1), x.sum(0), x.sum((0, 1)), x.amax(1), x.transpose(0, 2) * 1.0,
        gt.where(x > 0, x, b), gt.nn.functional.softmax(x, dim=-1), i * 3 + i, i % 7, x.sqrt().isnan()]
results = [o.numpy() for o in outs]
e = np.exp(x_np - x_np.max(-1, keepdims=True))
want = [np.maximum(x_np * 1.5 + b_np, 0), np.exp(x_np), x_np.sum(-1), x_np.sum(0), x_np.sum((0, 1)), x_np.max(1),
        x_np.transpose(2, 1, 0), np.where(x_np > 0, x_np, b_np), e / e.sum(-1, keepdims=True), i_np * 4, i_np % 7,
        np.isnan(np.sqrt(x_np))]
close = [bool(r.shape == w.shape and np.allclose(r, w, atol=1e-4, rtol=1e-4)) for r, w in zip(results, want)]
print(json.dumps({"close": close, "bits": [r.tobytes().hex() for r in results], "stats": gt.debug.stats()}))
"""


def test_large_eager_kernels_run_on_the_workers_threads_same_bits(tmp_path):
    dump = tmp_path / "kernels"
    dump.mkdir()
    runs = {threads: run_script(EAGER_PARALLEL, [], tmp_path, GT_JIT="0", GT_WORKER_THREADS=str(threads),
                                GT_JIT_PARALLEL_MIN="64", GT_CACHE_DIR=str(tmp_path / f"cache{threads}"),
                                GT_DUMP_KERNELS=str(dump))
            for threads in (1, 3)}
    for threads, out in runs.items():
        assert all(out["close"]), (threads, out["close"])
        assert out["stats"]["kernel_threads"] == threads and out["stats"]["regions_compiled"] == 0, out["stats"]
    assert runs[1]["bits"] == runs[3]["bits"]
    # The size-generic kernels as compiled (GT_DUMP_KERNELS: each kernel's gt IR and LLVM IR).
    forks = {}
    for source in dump.glob("*.mlir"):
        text = source.read_text()
        if "gt.dynamic_sizes" not in text:
            continue
        op = next(line.split("= gt.")[1].split()[0] for line in text.splitlines() if "= gt." in line)
        forks[op] = "__kmpc_fork_call" in source.with_suffix(".ll").read_text()
    assert forks.get("exp") and forks.get("mul") and forks.get("sum") and forks.get("where"), forks
    assert forks.get("remainder") is False, forks
