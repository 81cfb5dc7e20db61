"""Distributed execution over 2 and 4 CPU workers: signals + YAML configs shard tensors and
compute, workers exchange data over Gloo, and every strategy gives the results of one worker.

The strategies run as separate programs (test/python/sharding/job.py), each with its own
dispatcher and workers; the configs are in test/python/sharding/.
"""
import json
import os
import pathlib
import re
import shlex
import shutil
import signal
import subprocess
import sys
import time

import numpy as np
import pytest

import gt
from conftest import Daemons

HERE = os.path.dirname(os.path.abspath(__file__))
DIST = os.path.join(HERE, "sharding")
# float32 sums in a different order (per-worker partial sums, then all_reduce): a few ulps.
ATOL, RTOL = 1e-5, 1e-5


def compute_ops(worker_stats):
    """Compute instructions a worker ran: op by op or inside a fused region kernel (which of
    the two depends on when its background compilation finished)."""
    return worker_stats["eager_ops"] + worker_stats["fused_ops"]


def run_job(strategy, workers, config=None, env=None, timeout=180, extra=()):
    cmd = [sys.executable, os.path.join(DIST, "job.py"), strategy, str(workers)]
    if config:
        cmd += ["--config", os.path.join(DIST, config)]
    cmd += list(extra)
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=dict(os.environ, **(env or {})))
    assert p.returncode == 0, p.stderr[-3000:]
    return json.loads(p.stdout.strip().splitlines()[-1])


_baselines = {}


def baseline(strategy):
    """The strategy's run on one worker without a config: the reference."""
    if strategy not in _baselines:
        _baselines[strategy] = run_job(strategy, 1)
    return _baselines[strategy]


def assert_same_results(run, ref):
    np.testing.assert_allclose(run["losses"], ref["losses"], atol=ATOL, rtol=RTOL)
    np.testing.assert_allclose(run["y"], ref["y"], atol=ATOL, rtol=RTOL)
    for name in ref["params"]:  # after 3 SGD steps: the gradients were the same too
        np.testing.assert_allclose(run["params"][name], ref["params"][name], atol=ATOL, rtol=RTOL, err_msg=name)


UPLOADED = (13 * 6 + 13 * 4 + 6 * 8 + 8 + 8 * 4 + 4) * 4  # x, targets, w1, b1, w2, b2 (float32)
FETCHED = (3 + 13 * 4 + 6 * 8 + 8 + 8 * 4 + 4) * 4       # 3 losses, y, the parameters


def assert_dispatcher_moved_no_collective_bytes(run):
    # Only the client's own uploads and fetches passed through the dispatcher.
    assert run["dispatcher"]["dispatcher_upload_bytes"] == UPLOADED
    assert run["dispatcher"]["dispatcher_fetch_bytes"] == FETCHED


@pytest.mark.parametrize("workers", [2, 4])
def test_data_parallel(workers):
    run = run_job("data_parallel", workers, "data_parallel.yaml")
    assert_same_results(run, baseline("data_parallel"))
    stats = run["workers"]
    assert sorted(stats) == [str(w) for w in range(workers)]
    ops = [compute_ops(stats[str(w)]) for w in range(workers)]
    # Every worker ran the whole step on its rows: about the same number of ops each.
    assert min(ops) >= 0.9 * max(ops), ops
    for w in range(workers):
        # One all_reduce per step: the 4 parameter gradients (92 float32) in one bucket.
        assert stats[str(w)]["collective_ops"] == 3, stats[str(w)]
        assert stats[str(w)]["collective_bytes"] == 3 * 92 * 4, stats[str(w)]
    assert_dispatcher_moved_no_collective_bytes(run)


@pytest.mark.parametrize("bucket_bytes,all_reduces", [("0", 12), ("200", 6)])
def test_gradient_all_reduces_are_bucketed(bucket_bytes, all_reduces):
    # The gradients of w1, b1, w2 and b2 (192, 32, 128, 16 bytes) are all-reduced in buckets of
    # at most GT_BUCKET_BYTES: 0 turns bucketing off (4 per step), 200 gives w1 alone and the
    # other three together (2 per step), the default (64 MiB) one per step. Same results.
    run = run_job("data_parallel", 2, "data_parallel.yaml", env={"GT_BUCKET_BYTES": bucket_bytes})
    assert_same_results(run, baseline("data_parallel"))
    for s in run["workers"].values():
        assert s["collective_ops"] == all_reduces and s["collective_bytes"] == 3 * 92 * 4, s


def test_a_bad_bucket_size_is_an_error():
    p = subprocess.run([sys.executable, os.path.join(DIST, "job.py"), "data_parallel", "2"], capture_output=True,
                       text=True, timeout=120, env=dict(os.environ, GT_BUCKET_BYTES="64MB"))
    assert p.returncode != 0
    assert "GT_BUCKET_BYTES must be a number of bytes >= 0, got '64MB'" in p.stderr, p.stderr[-2000:]


def test_a_batch_made_outside_the_signal_is_split_by_it():
    # x and the targets live on one worker; `with gt.signal.context("data")` (shard axis 0)
    # splits x where the step first uses it, so the step runs data parallel as if x were made
    # under "data" (before, every worker ran the whole step on the whole batch).
    run = run_job("data_made_outside", 4, "data_parallel.yaml")
    assert_same_results(run, baseline("data_made_outside"))
    stats = run["workers"]
    ops = [compute_ops(stats[str(w)]) for w in range(4)]
    # Worker 0 also cuts the blocks it sends (3 slices of x and of t per step): ~20% more ops.
    assert min(ops) >= 0.75 * max(ops), ops
    # Each worker all-reduces the 92 float32 parameter gradients of its rows, each of 3 steps
    # (a replicated x would give whole gradients on every worker and no all_reduce of them).
    assert all(s["collective_bytes"] == 3 * 92 * 4 for s in stats.values()), stats
    # x and t (13 rows of 6 + 4 float32) are scattered: workers 1-3 receive their 3 rows each
    # step (plus a scalar and one-byte flags), not all 13.
    for w in (1, 2, 3):
        assert 3 * 3 * 10 * 4 <= stats[str(w)]["p2p_bytes_received"] < 3 * 4 * 10 * 4, stats[str(w)]
    assert_dispatcher_moved_no_collective_bytes(run)


@pytest.mark.parametrize("workers", [2, 4])
def test_sharded_steps_run_fused_regions(workers):
    # gt-mark-hot-regions runs on each worker's program: regions that repeat (steps 2 and 3)
    # are compiled (GT_JIT_SYNC: before their first run) and replayed as fused kernels.
    run = run_job("data_parallel", workers, "data_parallel.yaml", env={"GT_JIT_SYNC": "1"})
    assert_same_results(run, baseline("data_parallel"))
    for w, s in run["workers"].items():
        assert s["region_replays"] > 0 and s["fused_ops"] > 0, (w, s)
        assert s["region_fallbacks"] == 0, (w, s)


def test_compile_true_compiles_regions_at_first_sight():
    # With GT_HOT_AFTER too high to reach in 3 steps, only `compile: true` makes regions hot.
    env = {"GT_JIT_SYNC": "1", "GT_HOT_AFTER": "1000"}
    plain = run_job("data_parallel", 2, "data_parallel.yaml", env=env)
    compiled = run_job("data_parallel", 2, "data_parallel_compiled.yaml", env=env)
    assert_same_results(compiled, baseline("data_parallel"))
    for w in ("0", "1"):
        assert plain["workers"][w]["regions_seen"] > 0
        assert plain["workers"][w]["regions_hot"] == 0, plain["workers"][w]
        assert compiled["workers"][w]["regions_hot"] > 0, compiled["workers"][w]
        assert compiled["workers"][w]["region_replays"] > 0, compiled["workers"][w]


@pytest.mark.parametrize("workers", [2, 4])
def test_tensor_parallel(workers):
    run = run_job("tensor_parallel", workers, "tensor_parallel.yaml")
    assert_same_results(run, baseline("tensor_parallel"))
    stats = run["workers"]
    for w in range(workers):
        # Column- then row-parallel: exactly one all_reduce per step, forward and backward.
        assert stats[str(w)]["collective_ops"] == 3, stats[str(w)]
        assert compute_ops(stats[str(w)]) > 50
    assert_dispatcher_moved_no_collective_bytes(run)


def test_pipeline_two_stages():
    run = run_job("pipeline", 2, "pipeline.yaml")
    assert_same_results(run, baseline("pipeline"))
    s0, s1 = run["workers"]["0"], run["workers"]["1"]
    # Activations move forward, gradients back: point-to-point only.
    assert s0["p2p_bytes_sent"] > 13 * 8 * 4 and s1["p2p_bytes_sent"] > 13 * 8 * 4
    assert s0["collective_ops"] == 0 and s1["collective_ops"] == 0
    assert compute_ops(s0) > 20 and compute_ops(s1) > 20
    assert_dispatcher_moved_no_collective_bytes(run)


def test_pipeline_four_workers_with_backward_signal():
    run = run_job("pipeline", 4, "pipeline_4.yaml")
    assert_same_results(run, baseline("pipeline"))
    stats = run["workers"]
    # Stage 1's gradients run on workers 2 and 3 (its `backward:` entry), so they do most work.
    assert compute_ops(stats["2"]) > 2 * compute_ops(stats["0"])
    assert stats["0"]["p2p_bytes_sent"] > 0 and stats["2"]["p2p_bytes_received"] > 0
    assert_dispatcher_moved_no_collective_bytes(run)


@pytest.mark.parametrize("strategy,workers,config", [("data_parallel", 2, "data_parallel.yaml"),
                                                     ("tensor_parallel", 4, "tensor_parallel.yaml"),
                                                     ("pipeline", 4, "pipeline_4.yaml")])
def test_sharded_steps_free_what_they_no_longer_need(strategy, workers, config):
    # A step's intermediates die within the batch that makes them (the backward pass frees
    # them as it goes): each worker must free them too, so its live tensors stop growing once
    # the optimizer state exists. (The dispatcher once dropped such frees in sharded sessions:
    # char_gpt leaked 900 tensors, 64 MB, per step on every worker.)
    run = run_job(strategy, workers, config, extra=["--live"])
    assert_same_results(run, baseline(strategy))
    first, second, third = run["live"]
    assert sorted(third) == [str(w) for w in range(workers)]
    assert second == third, run["live"]
    assert all(n < 40 for n in third.values()), third  # parameters, inputs, targets, a few scalars


@pytest.mark.parametrize("workers", [2, 4])
def test_signals_mixed_in_one_step(workers):
    run = run_job("mixed", workers, "mixed.yaml")
    assert_same_results(run, baseline("mixed"))
    assert all(s["collective_ops"] > 0 for s in run["workers"].values())


def run_ops(*args):
    p = subprocess.run([sys.executable, os.path.join(DIST, "ops.py"), *map(str, args)], capture_output=True,
                       text=True, timeout=180)
    assert p.returncode == 0, p.stderr[-3000:]
    return json.loads(p.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("workers,signal", [(3, "rows"), (4, "rows"), (3, "cols"), (4, "last")])
def test_ops_on_split_tensors_match_one_worker(workers, signal):
    # Reductions, softmax, layer norm, layout ops, matmuls and gradients on a 13x7 tensor split
    # unevenly along rows, columns or the last axis: the passes insert all_gather, all_reduce,
    # all_to_all (a column-split operand of a matmul) and reduce_scatter as each op needs.
    ref = run_ops(1)
    run = run_ops(workers, signal, os.path.join(DIST, "split_axes.yaml"))
    assert not [k for k, v in ref.items() if isinstance(v, str)], ref
    for name, want in ref.items():
        if name == "collective_ops":
            continue
        got = run[name]
        assert not isinstance(got, str), f"{name}: {got}"
        np.testing.assert_allclose(np.asarray(got, dtype=np.float64), np.asarray(want, dtype=np.float64),
                                   atol=1e-5, rtol=1e-5, err_msg=name)
    assert len(run["collective_ops"]) == workers and min(run["collective_ops"]) > 0


@pytest.mark.parametrize("workers", [2, 4])
def test_auto_shard_makes_a_plain_script_data_parallel(workers):
    # No signals, no config: GT_AUTO_SHARD=1 splits the tensors of at least
    # GT_AUTO_SHARD_BYTES (x: 13x6, targets: 13x4 float32) along axis 0 over all workers and
    # replicates the smaller ones (the weights): the step runs data parallel.
    run = run_job("plain", workers, env={"GT_AUTO_SHARD": "1", "GT_AUTO_SHARD_BYTES": "200"})
    assert_same_results(run, baseline("plain"))
    stats = run["workers"]
    ops = [compute_ops(stats[str(w)]) for w in range(workers)]
    assert min(ops) >= 0.9 * max(ops), ops
    for w in range(workers):
        assert stats[str(w)]["collective_ops"] == 3, stats[str(w)]  # the weight gradients, one bucket a step
    assert_dispatcher_moved_no_collective_bytes(run)


def test_auto_shard_rejects_a_bad_value():
    p = subprocess.run([sys.executable, os.path.join(DIST, "job.py"), "plain", "2"], capture_output=True, text=True,
                       timeout=120, env=dict(os.environ, GT_AUTO_SHARD="yes"))
    assert p.returncode != 0 and "GT_AUTO_SHARD must be 0 or 1, got 'yes'" in p.stderr


def test_the_sharded_step_shows_its_collectives_in_gt_opt(tmp_path):
    # GT_DUMP_IR records each batch; gt-opt replays the sharding passes on the captured one.
    dump = tmp_path / "ir"
    dump.mkdir()
    run_job("data_parallel", 2, "data_parallel.yaml", env={"GT_DUMP_IR": str(dump)})
    captured = sorted(dump.glob("*-captured.mlir"), key=lambda p: p.stat().st_size)[-1]
    opt = os.path.join(gt._runtime.bin_dir(), "gt-opt")
    if not os.path.exists(opt):
        opt = os.path.join(os.path.dirname(HERE), "..", "build", "tools", "gt-opt", "gt-opt")
    out = subprocess.run([opt, str(captured), f"--gt-apply-signals=config={DIST}/data_parallel.yaml num-workers=2",
                          "--gt-propagate-sharding", "--gt-insert-collectives"],
                         capture_output=True, text=True, check=True).stdout
    assert 'gt.all_reduce' in out and 'gt.signal = "params"' in out, out[-2000:]
    sharded = sorted(dump.glob("*-placed.mlir"), key=lambda p: p.stat().st_size)[-1].read_text()
    assert "func.func @worker0" in sharded and "func.func @worker1" in sharded


def _region_marks(ir):
    """(worker function, region key, hot?) of every gt.region, in order."""
    marks, func = [], None
    for line in ir.splitlines():
        if m := re.search(r"func\.func @(\w+)", line):
            func = m.group(1)
        if "gt.region(" in line and (m := re.search(r"\{([^{}]*key = \"[0-9a-f]+\"[^{}]*)\}", line)):
            attrs = m.group(1)
            marks.append((func, re.search(r'key = "([0-9a-f]+)"', attrs).group(1), bool(re.search(r"\bhot\b", attrs))))
    return marks


@pytest.mark.parametrize("workers,config", [(2, "data_parallel_compiled.yaml"), (1, None)], ids=["sharded", "plain"])
def test_a_dump_replays_with_the_command_at_its_top(tmp_path, workers, config):
    # Each captured batch starts with `// replay: gt-opt FILE --gt-dispatcher-pipeline="..."`
    # (with config=... for a session that loaded one); running it gives the dispatcher's placed
    # IR again: the same worker functions, regions, region keys and hot marks (ops under
    # `compile: true` are hot at first sight). A plain session runs the same pipeline.
    dump = tmp_path / "ir"
    dump.mkdir()
    run_job("data_parallel", workers, config, env={"GT_DUMP_IR": str(dump)})
    opt = os.path.join(gt._runtime.bin_dir(), "gt-opt")
    compared = hot = 0
    for captured in sorted(dump.glob("*-captured.mlir")):
        placed = pathlib.Path(str(captured).replace("-captured", "-placed"))
        if not placed.exists():
            continue  # the job exited (stopping its dispatcher) while this batch was in the passes
        first = captured.read_text().splitlines()[0]
        assert first.startswith("// replay: gt-opt "), first
        command = shlex.split(first[len("// replay: "):])
        assert ("config=" in command[-1]) == bool(config), command
        out = subprocess.run([opt] + command[1:], capture_output=True, text=True, timeout=60)
        assert out.returncode == 0, out.stderr[-2000:]
        want = _region_marks(placed.read_text())
        assert _region_marks(out.stdout) == want, captured.name
        compared += bool(want)
        hot += sum(h for _, _, h in want)
    assert compared >= 1 and (hot >= 1 or not config), (compared, hot)


def test_config_errors_name_the_line(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("data:\n  shard: {axis: 0}\nlayer1:\n  sharded: {axis: 0}\n")
    with pytest.raises(ValueError, match=r"bad.yaml:4: unknown key 'sharded' in signal 'layer1'"):
        gt.load_config(str(bad))
    bad.write_text("stage:\n  shard: {axis: 0, workers: [0, 7]}\n")
    with pytest.raises(ValueError, match=r"bad.yaml:2: signal 'stage' names worker 7, but there are only"):
        gt.load_config(str(bad))
    with pytest.raises(FileNotFoundError):
        gt.load_config(str(tmp_path / "missing.yaml"))
    # The session keeps working (and stays unsharded).
    assert (gt.tensor([1.0, 2.0]) * 2).numpy().tolist() == [2.0, 4.0]


AXIS_SCRIPT = """
import gt, sys
gt.gpu_workers(2)
gt.load_config(sys.argv[1])
with gt.signal.context('rows'):
    x = gt.ones(4)
try:
    x.numpy()
except RuntimeError as e:
    print(e)
del x                # freeing a poisoned tensor is fine
y = gt.ones(3) + 1   # and the session still works
print(y.numpy().tolist())
"""


def run_script_with_config(tmp_path, name, script, config):
    """Runs `script` saved as tmp_path/name with a config file holding `config` (as axis.yaml);
    its stdout lines."""
    cfg = tmp_path / "axis.yaml"
    cfg.write_text(config)
    path = tmp_path / name
    path.write_text(script)
    p = subprocess.run([sys.executable, str(path), str(cfg)], capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    return p.stdout.strip().splitlines()


def test_axis_out_of_range_is_reported_at_the_users_line(tmp_path):
    lines = run_script_with_config(tmp_path, "axis.py", AXIS_SCRIPT, "rows:\n  shard:\n    axis: 1\n")
    assert "axis.yaml:3: signal 'rows' splits axis 1, but the tensor has rank 1" in lines[0]
    assert "axis.py:6" in lines[0]
    assert lines[1] == "[2.0, 2.0, 2.0]"


ONE_BAD_OP_SCRIPT = """
import gt, sys
gt.gpu_workers(2)
gt.load_config(sys.argv[1])
with gt.signal.context('params'):
    w = gt.ones(3)
with gt.signal.context('rows'):
    x = gt.ones(4)
z = x * 2            # reads the bad tensor: poisoned with its error
w2 = w * 3 + 1       # the same batch, unrelated to x: still runs
print(w2.numpy().tolist())
try:
    z.numpy()
except RuntimeError as e:
    print(e)
"""


def test_a_bad_op_poisons_only_what_reads_it(tmp_path):
    # The config's axis does not fit x, so the passes reject the batch; the dispatcher runs it
    # again one op at a time and poisons only x and z (before, w2 was lost with them).
    lines = run_script_with_config(tmp_path, "one_bad_op.py", ONE_BAD_OP_SCRIPT,
                                   "rows:\n  shard:\n    axis: 1\nparams:\n  replicated: true\n")
    assert lines[0] == "[4.0, 4.0, 4.0]"
    assert "axis.yaml:3: signal 'rows' splits axis 1, but the tensor has rank 1" in lines[1]
    assert "one_bad_op.py:8" in lines[1]


UNKNOWN_FREE_SCRIPT = """
import gt, sys
gt.gpu_workers(2)
gt.load_config(sys.argv[1])
with gt.signal.context('params'):
    w = gt.ones(3)
    a = w * 2
    gt._tensor._client().release(10 ** 9)  # a client bug: an id this session never had
    b = a + 1
    del a                                   # freed in the same batch that made it
print(b.numpy().tolist())
print(sorted(s['live_tensors'] for s in gt.debug.stats()['by_worker'].values()))
"""


def test_a_free_of_an_unknown_id_does_not_cost_the_batch(tmp_path):
    # The free of an id the session never had is dropped; the rest of its batch runs, and the
    # free of `a`, made earlier in that batch, still reaches both workers: w, b and the two
    # scalars (2 and 1, which gt caches) live there, not a.
    lines = run_script_with_config(tmp_path, "unknown_free.py", UNKNOWN_FREE_SCRIPT,
                                   "params:\n  replicated: true\n")
    assert lines[0] == "[3.0, 3.0, 3.0]"
    assert lines[1] == "[4, 4]"


def test_a_bad_upload_in_a_sharded_batch_poisons_only_what_reads_it(tmp_path):
    d = Daemons(workers=2)
    try:
        c = d.client()
        c.load_config("data:\n  shard: {axis: 0}\n", "dp.yaml")
        c.set_signal("data")
        # 8 bytes for a 4-element float32 tensor: the dispatcher refuses this upload.
        bad, _, _ = c.upload(np.zeros(2, dtype=np.float32), [4], 0)
        bad_exp, _, _ = c.emit(gt._C.op_code("exp"), [bad])
        good, _, _ = c.upload(np.arange(4, dtype=np.float32), [4], 0)
        good_exp, _, _ = c.emit(gt._C.op_code("exp"), [good])
        data, _, _ = c.fetch(good_exp)  # one batch with the bad upload, which is not lost
        np.testing.assert_allclose(np.frombuffer(data, np.float32), np.exp(np.arange(4)), rtol=1e-6)
        with pytest.raises(gt.RemoteError, match=r"refused upload at .*: carries 8 bytes, a float32\[4\] tensor needs 16"):
            c.fetch(bad_exp)
    finally:
        d.stop()


PLAN_SCRIPT = """
import gt, json, sys
import numpy as np
workers = int(sys.argv[1])
gt.gpu_workers(workers)
if workers > 1:
    gt.load_config(sys.argv[2])
gt.manual_seed(0)
with gt.signal.context("params"):
    w = gt.tensor(np.arange(12, dtype=np.float32).reshape(4, 3) / 10)
out = []
for step in range(4):            # the same structure each time; new seeds, scalars and bytes
    with gt.signal.context("data"):
        x = gt.randn(13, 4) + gt.tensor(np.full((13, 4), step, dtype=np.float32))
        y = (x @ w) * (0.5 + step)
    out.append(y.numpy().tolist())
stats = gt.debug.stats()
print(json.dumps({"out": out, "hits": stats["dispatcher_plan_cache_hits"],
                  "misses": stats["dispatcher_plan_cache_misses"]}))
"""


def test_the_plan_cache_replays_a_repeated_step_with_its_new_values(tmp_path):
    # Every loop iteration is one batch (the fetch ends it). The first also makes w, the second
    # also frees the first's x and y; from the third on the batches have the same structure and
    # the dispatcher replays the second's plan with each batch's seeds, fill values and bytes.
    # One worker without a config (a plain session: the same path, an empty config) too.
    script = tmp_path / "plan.py"
    script.write_text(PLAN_SCRIPT)
    runs = {}
    for workers, cache in ((1, "0"), (1, "1"), (2, "1")):
        p = subprocess.run([sys.executable, str(script), str(workers), os.path.join(DIST, "data_parallel.yaml")],
                           capture_output=True, text=True, timeout=120, env=dict(os.environ, GT_PLAN_CACHE=cache))
        assert p.returncode == 0, p.stderr[-3000:]
        runs[workers, cache] = json.loads(p.stdout.strip().splitlines()[-1])
    reference = runs[1, "0"]
    assert reference["hits"] == 0 and reference["misses"] == 0, reference
    outs = np.array(reference["out"])
    assert not np.allclose(outs[0], outs[1])  # the steps differ (seed, fill value, upload)
    for run in (runs[1, "1"], runs[2, "1"]):
        np.testing.assert_allclose(run["out"], reference["out"], atol=ATOL, rtol=RTOL)
        assert run["hits"] == 2 and run["misses"] == 2, run


REPLICA_SCRIPT = """
import gt, json, sys
import numpy as np
gt.gpu_workers(2)
gt.load_config(sys.argv[1])
s = gt.tensor(np.full(4, 3.0, np.float32))  # outside any signal: on worker 0
with gt.signal.context('far'):
    p = gt.ones(4)                           # on worker 1
sent, values = [], []
for step in range(3):
    with gt.signal.context('far'):
        p = p * s                            # needs s on worker 1
    values.append(p.numpy().tolist())
    sent.append(gt.debug.stats()['by_worker'][0].get('p2p_bytes_sent', 0))
live = [gt.debug.stats()['by_worker'][w]['live_tensors'] for w in (0, 1)]
del s
gt.debug.stats()
print(json.dumps({'values': values, 'sent': sent, 'live': live,
                  'after': [gt.debug.stats()['by_worker'][w]['live_tensors'] for w in (0, 1)]}))
"""


def test_a_tensor_moved_to_a_worker_is_kept_there(tmp_path):
    # Tensors never change, so the copy of s that worker 1 receives in the first step stays
    # there: the next steps use it without moving s again, and freeing s frees both copies.
    lines = run_script_with_config(tmp_path, "replica.py", REPLICA_SCRIPT, "far:\n  replicated: {workers: [1]}\n")
    run = json.loads(lines[-1])
    assert run["values"] == [[3.0] * 4, [9.0] * 4, [27.0] * 4]
    first, second, third = run["sent"]
    assert first >= 16 and second == first and third == first, run["sent"]
    assert [before - after for before, after in zip(run["live"], run["after"])] == [1, 1], run


THREADS_SCRIPT = """
import gt, json, sys
gt.gpu_workers(int(sys.argv[1]))
(gt.ones(2) + 1).numpy()
print(json.dumps([w.get("blas_threads") for w in gt.debug.stats()["by_worker"].values()]))
"""


def test_local_cpu_workers_split_the_cores(tmp_path, monkeypatch):
    # OpenBLAS threads spin while they wait: n workers on one machine get cores / n each.
    from gt import _runtime
    monkeypatch.delenv("GT_WORKER_THREADS", raising=False)
    for name in ("OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "OMP_NUM_THREADS"):
        monkeypatch.delenv(name, raising=False)
    cores = len(os.sched_getaffinity(0))
    assert _runtime.worker_threads(1) is None  # one worker: the library's default
    assert _runtime.worker_threads(2) == max(1, cores // 2)
    assert _runtime.worker_threads(4 * cores) == 1
    monkeypatch.setenv("OPENBLAS_NUM_THREADS", "3")
    assert _runtime.worker_threads(2) is None  # the user's OpenBLAS setting stands
    monkeypatch.delenv("OPENBLAS_NUM_THREADS")
    monkeypatch.setenv("OMP_NUM_THREADS", "1")
    assert _runtime.worker_threads(2) is None  # and so does the user's OpenMP setting (torchrun's)
    monkeypatch.delenv("OMP_NUM_THREADS")
    monkeypatch.setenv("GT_WORKER_THREADS", "2")
    assert _runtime.worker_threads(4) == 2
    monkeypatch.setenv("GT_WORKER_THREADS", "two")
    with pytest.raises(ValueError, match="GT_WORKER_THREADS must be a positive integer, got 'two'"):
        _runtime.worker_threads(2)
    # The workers really run with it (each reports its BLAS threads).
    script = tmp_path / "threads.py"
    script.write_text(THREADS_SCRIPT)
    env = {k: v for k, v in os.environ.items()
           if k not in ("GT_WORKER_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "OMP_NUM_THREADS")}
    for workers, want in ((2, max(1, cores // 2)), (3, max(1, cores // 3))):
        p = subprocess.run([sys.executable, str(script), str(workers)], capture_output=True, text=True, timeout=120,
                           env=env)
        assert p.returncode == 0, p.stderr[-2000:]
        assert json.loads(p.stdout.strip().splitlines()[-1]) == [want] * workers
    p = subprocess.run([sys.executable, str(script), "1"], capture_output=True, text=True, timeout=120,
                       env=dict(env, GT_WORKER_THREADS="1"))
    assert p.returncode == 0, p.stderr[-2000:]
    assert json.loads(p.stdout.strip().splitlines()[-1]) == [1]


PIN_SCRIPT = """
import gt, json, os
a = gt.randn(256, 256)
((a @ a).relu() * 2).sum().item()  # the worker's kernel and GEMM threads exist by now
from gt import _runtime
dispatcher, worker = _runtime._processes
def cpus(p):
    return {int(t): sorted(os.sched_getaffinity(int(t))) for t in os.listdir(f"/proc/{p.pid}/task")}
print(json.dumps({"dispatcher": cpus(dispatcher), "worker": cpus(worker), "worker_pid": worker.pid,
                  "mine": sorted(os.sched_getaffinity(0))}))
"""


def test_one_local_cpu_worker_pins_its_executor(tmp_path, monkeypatch):
    # One auto-started CPU worker: its executor thread gets the last CPU to itself; the
    # dispatcher and the worker's RPC thread keep off it; the kernels' other threads keep all.
    from gt import _runtime
    monkeypatch.delenv("GT_PIN_EXECUTOR", raising=False)
    monkeypatch.delenv("GT_DEVICE", raising=False)
    cpus = sorted(os.sched_getaffinity(0))
    assert _runtime.executor_cpu(1) == (cpus[-1] if len(cpus) >= 2 else None)
    assert _runtime.executor_cpu(2) is None  # several workers share the cores as they are
    monkeypatch.setenv("GT_PIN_EXECUTOR", "0")
    assert _runtime.executor_cpu(1) is None
    script = tmp_path / "pin.py"
    script.write_text(PIN_SCRIPT)
    env = {k: v for k, v in os.environ.items() if k not in ("GT_PIN_EXECUTOR", "GT_DEVICE", "GT_SERVER")}
    for pin in (True, False):
        p = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=120,
                           env=env if pin else dict(env, GT_PIN_EXECUTOR="0"))
        assert p.returncode == 0, p.stderr[-2000:]
        run = json.loads(p.stdout.strip().splitlines()[-1])
        mine = run["mine"]
        worker = {int(t): c for t, c in run["worker"].items()}
        pinned = [t for t, c in worker.items() if c == [mine[-1]]]
        if not pin or len(mine) < 2:
            assert all(c == mine for c in worker.values()), run
            assert all(c == mine for c in run["dispatcher"].values()), run
            continue
        others = mine[:-1]
        assert len(pinned) == 1, run  # the executor
        assert worker[run["worker_pid"]] == others, run  # the RPC thread
        assert all(c == others for c in run["dispatcher"].values()), run
        assert any(c == mine for c in worker.values()), run  # the kernels' other threads


def test_idle_spin_of_a_pinned_executor_defaults_and_is_checked(monkeypatch):
    from gt import _runtime
    monkeypatch.delenv("GT_IDLE_SPIN_US", raising=False)
    assert _runtime.idle_spin_us() == 2000
    monkeypatch.setenv("GT_IDLE_SPIN_US", "0")
    assert _runtime.idle_spin_us() == 0
    for bad in ("-1", "2ms", "2000000"):
        monkeypatch.setenv("GT_IDLE_SPIN_US", bad)
        with pytest.raises(ValueError, match="GT_IDLE_SPIN_US=.*whole number from 0 to 1000000"):
            _runtime.idle_spin_us()
    p = subprocess.run([os.path.join(_runtime.bin_dir(), "gt-worker"), "-p", "1", "--idle-spin-us", "-5"],
                       capture_output=True, text=True, timeout=60)
    assert p.returncode != 0 and "--idle-spin-us" in p.stderr, p.stderr


def test_worker_refuses_an_executor_cpu_it_may_not_use():
    from gt import _runtime
    p = subprocess.run([os.path.join(_runtime.bin_dir(), "gt-worker"), "-p", "1", "--executor-cpu", "4096"],
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 1
    assert "--executor-cpu 4096: not one of the CPUs this process may use" in p.stderr, p.stderr


def test_signal_api_without_config():
    # Without a config every signal is ignored: same values, same gradients.
    x = gt.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
    with gt.signal.context("anything", backward="anything_else"):
        assert gt.signal.current() == ("anything", "anything_else")
        y = gt.signal.tensor(x, name="other") * 3
    assert gt.signal.current() == (None, None)
    y.sum().backward()
    assert x.grad.numpy().tolist() == [[3.0, 3.0], [3.0, 3.0]]
    gt.signal.enter("a")
    gt.signal.enter("b")
    with pytest.raises(RuntimeError, match="innermost active signal is 'b'"):
        gt.signal.exit("a")
    gt.signal.exit("b")
    gt.signal.exit("a")
    with pytest.raises(RuntimeError, match="no signal is active"):
        gt.signal.exit()
    with pytest.raises(ValueError):
        gt.signal.enter("")


FAULT_CLIENT = """
import sys, numpy as np, gt
gt.load_config(sys.argv[1])
with gt.signal.context('params'):
    w = gt.tensor(np.ones((4, 4), np.float32), requires_grad=True)
with gt.signal.context('data'):
    x = gt.tensor(np.ones((8, 4), np.float32))
    (x @ w).sum().backward()
with gt.no_grad(), gt.signal.context('params'):
    w2 = w - w.grad              # all_reduce of the gradient
print(float(w2.sum().item()), flush=True)   # both workers are connected now
sys.stdin.readline()                        # the test stops one worker
with gt.signal.context('data'):
    (x @ w).sum().backward()
with gt.no_grad(), gt.signal.context('params'):
    w3 = w - w.grad
try:
    w3.numpy()
    print("no error")
except RuntimeError as e:
    print("error:", e)
"""


def test_worker_killed_during_a_collective(tmp_path):
    d = Daemons(workers=2, env={"GT_COLLECTIVE_TIMEOUT": "60"})
    try:
        cfg = tmp_path / "dp.yaml"
        cfg.write_text("data:\n  shard: {axis: 0}\nparams:\n  replicated: true\n")
        script = tmp_path / "client.py"
        script.write_text(FAULT_CLIENT)
        client = subprocess.Popen([sys.executable, str(script), str(cfg)], stdin=subprocess.PIPE,
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                  env=dict(os.environ, GT_SERVER=f"127.0.0.1:{d.port}"))
        first = client.stdout.readline()
        assert float(first) == 16 * (1 - 8)  # w - dsum(x @ w)/dw with x, w ones: every element 1 - 8
        victim = d.workers[1]
        victim.send_signal(signal.SIGSTOP)          # it never reaches the all_reduce
        client.stdin.write("go\n")
        client.stdin.flush()
        time.sleep(1.0)                             # the other worker now waits in the collective
        victim.kill()
        out, err = client.communicate(timeout=60)
        assert "error:" in out, out + err
        assert "worker" in out and ("died" in out or "broke" in out), out
        print(out)
        # The dispatcher keeps serving: a new session on the surviving worker.
        c = d.client()
        ida, _, _ = c.upload(np.arange(3, dtype=np.float32), [3], 0)
        idb, _, _ = c.emit(gt._C.op_code("exp"), [ida])
        data, shape, code = c.fetch(idb)
        np.testing.assert_allclose(np.frombuffer(data, np.float32), np.exp(np.arange(3)), rtol=1e-6)
    finally:
        d.stop()


EXAMPLES = os.path.join(os.path.dirname(os.path.dirname(HERE)), "examples")


@pytest.mark.skipif(not os.path.exists("/usr/share/datasets/fashion-mnist"), reason="dataset-fashion-mnist missing")
def test_fashion_mnist_data_parallel_reaches_the_accuracy_of_one_worker():
    def accuracy(*extra):
        p = subprocess.run([sys.executable, os.path.join(EXAMPLES, "fashion_mnist.py"), "--epochs", "1",
                            "--limit", "4096", *extra], capture_output=True, text=True, timeout=600)
        assert p.returncode == 0, p.stderr[-3000:]
        return float(re.findall(r"test accuracy ([0-9.]+)%", p.stdout)[-1])

    one = accuracy()
    four = accuracy("--workers", "4", "--config", os.path.join(EXAMPLES, "configs", "data_parallel.yaml"))
    assert one > 60  # learned something (10 classes: 10% by chance)
    # The same steps on the same data: only the order of float32 sums differs.
    assert abs(one - four) <= 0.3, (one, four)


def _can_make_namespaces():
    if os.geteuid() != 0 or not shutil.which("ip"):
        return False
    probe = f"gtprobe{os.getpid()}"
    ok = subprocess.run(["ip", "netns", "add", probe], capture_output=True).returncode == 0
    subprocess.run(["ip", "netns", "del", probe], capture_output=True)
    return ok


class Namespaces:
    """A dispatcher namespace with a bridge and one namespace per worker, joined by veth
    pairs: 10.77.<n>.1 is the dispatcher, 10.77.<n>.2+i worker i. Nothing is loopback."""

    def __init__(self, workers):
        tag = os.getpid() % 200
        self.net = f"10.77.{tag}"
        self.d = f"gtd{tag}"
        self.w = [f"gtw{tag}_{i}" for i in range(workers)]
        self.run("ip", "netns", "add", self.d)
        self.ns(self.d, "ip", "link", "set", "lo", "up")
        self.ns(self.d, "ip", "link", "add", "br0", "type", "bridge")
        self.ns(self.d, "ip", "addr", "add", f"{self.net}.1/24", "dev", "br0")
        self.ns(self.d, "ip", "link", "set", "br0", "up")
        for i, w in enumerate(self.w):
            self.run("ip", "netns", "add", w)
            self.ns(w, "ip", "link", "set", "lo", "up")
            self.run("ip", "link", "add", f"gtv{tag}d{i}", "type", "veth", "peer", "name", f"gtv{tag}w{i}")
            self.run("ip", "link", "set", f"gtv{tag}d{i}", "netns", self.d)
            self.run("ip", "link", "set", f"gtv{tag}w{i}", "netns", w)
            self.ns(self.d, "ip", "link", "set", f"gtv{tag}d{i}", "master", "br0")
            self.ns(self.d, "ip", "link", "set", f"gtv{tag}d{i}", "up")
            self.ns(w, "ip", "addr", "add", f"{self.net}.{2 + i}/24", "dev", f"gtv{tag}w{i}")
            self.ns(w, "ip", "link", "set", f"gtv{tag}w{i}", "up")

    @staticmethod
    def run(*cmd):
        subprocess.run(cmd, check=True, capture_output=True)

    def ns(self, name, *cmd):
        self.run("ip", "netns", "exec", name, *cmd)

    def remove(self):
        for name in [self.d] + self.w:
            subprocess.run(["ip", "netns", "del", name], capture_output=True)


@pytest.mark.skipif(not _can_make_namespaces(), reason="needs root and ip netns")
def test_across_network_namespaces(tmp_path):
    nets = Namespaces(workers=2)
    procs = []
    try:
        bindir = gt._runtime.bin_dir()
        d = subprocess.Popen(["ip", "netns", "exec", nets.d, os.path.join(bindir, "gt-dispatcher"), "-H", "0.0.0.0",
                              "-p", "0"], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        procs.append(d)
        port = int(d.stdout.readline().rsplit(":", 1)[1])
        logs = []
        for i, w in enumerate(nets.w):
            log = open(tmp_path / f"worker{i}.log", "w+")
            logs.append(log)
            procs.append(subprocess.Popen(["ip", "netns", "exec", w, os.path.join(bindir, "gt-worker"),
                                           "--host", f"{nets.net}.1", "-p", str(port)], stdout=log, stderr=log))
        cmd = ["ip", "netns", "exec", nets.d, sys.executable, os.path.join(DIST, "job.py"), "data_parallel", "2",
               "--config", os.path.join(DIST, "data_parallel.yaml")]
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=180,
                           env=dict(os.environ, GT_SERVER=f"{nets.net}.1:{port}"))
        assert p.returncode == 0, p.stderr[-3000:]
        run = json.loads(p.stdout.strip().splitlines()[-1])
        assert_same_results(run, baseline("data_parallel"))
        assert all(s["collective_ops"] == 3 for s in run["workers"].values())  # a gradient bucket per step
        text = "".join((tmp_path / f"worker{i}.log").read_text() for i in range(2))
        # Gloo listened on the namespaces' own addresses, not on loopback.
        assert f"collectives: Gloo on {nets.net}.2" in text and f"collectives: Gloo on {nets.net}.3" in text, text
    finally:
        for proc in procs:
            proc.kill()
            proc.wait()
        nets.remove()


CHAR_GPT = """
import json, sys
sys.path.insert(0, sys.argv[1])
import char_gpt, gt
args = char_gpt.parse(["--steps", "3", "--batch-size", "8", "--block-size", "16", "--layers", "2", "--embd", "32",
                       "--sample", "0", "--eval-every", "3", "--workers", sys.argv[2]] + sys.argv[3:])
char_gpt.start(args)
result = char_gpt.train(args)
result["workers"] = {str(k): v for k, v in gt.debug.stats()["by_worker"].items()}
print(json.dumps(result))
"""


def run_char_gpt(workers, config=None):
    extra = ["--config", os.path.join(os.path.dirname(os.path.dirname(HERE)), "examples", "configs", config)] if config else []
    p = subprocess.run([sys.executable, "-c", CHAR_GPT, os.path.join(os.path.dirname(os.path.dirname(HERE)), "examples"),
                        str(workers)] + extra, capture_output=True, text=True, timeout=600)
    assert p.returncode == 0, p.stderr[-3000:]
    return json.loads(p.stdout.strip().splitlines()[-1])


@pytest.mark.skipif(not os.path.exists("/usr/share/doc/jargon-text/jargon.txt.gz"), reason="jargon-text not installed")
@pytest.mark.parametrize("config,workers", [("data_parallel.yaml", 4), ("char_gpt_tensor_parallel.yaml", 2),
                                            ("char_gpt_pipeline.yaml", 2)])
def test_char_gpt_configs_match_one_worker(config, workers):
    # The GPT example names signals ('params', 'data', 'embed', 'block0', 'block1', 'head',
    # 'mlp_up', 'mlp_down'); each config in examples/configs gives the one-worker losses.
    if "char_gpt" not in _baselines:
        _baselines["char_gpt"] = run_char_gpt(1)
    ref, run = _baselines["char_gpt"], run_char_gpt(workers, config)
    # AdamW divides by sqrt(v): float32 sums in another order differ by a little more than ulps.
    np.testing.assert_allclose(run["history"], ref["history"], atol=1e-4, rtol=1e-4)
    np.testing.assert_allclose(run["val"], ref["val"], atol=1e-4, rtol=1e-4)
    stats = run["workers"]
    assert sorted(stats) == [str(w) for w in range(workers)]
    if config == "char_gpt_pipeline.yaml":
        # Two stages: each worker ran its own blocks; activations and gradients moved worker to worker.
        assert all(compute_ops(s) > 100 for s in stats.values()), stats
        assert stats["0"]["p2p_bytes_sent"] > 0 and stats["1"]["p2p_bytes_sent"] > 0
        assert all(s["collective_ops"] == 0 for s in stats.values())
    else:
        ops = [compute_ops(s) for s in stats.values()]
        assert min(ops) >= 0.9 * max(ops), ops
        assert all(s["collective_ops"] > 0 and s["collective_bytes"] > 0 for s in stats.values()), stats


def test_collectives_exist_and_raise_as_before_init_process_group():
    # vector-quantize-pytorch imports torch.distributed.nn and calls all_reduce only when initialized
    import gt.distributed as dist
    import gt.distributed.nn.functional as dist_fn
    assert not dist.is_initialized() and dist.ReduceOp.SUM
    for collective in (dist.all_reduce, dist.all_gather, dist.broadcast, dist_fn.all_gather):
        with pytest.raises(ValueError, match="Default process group has not been initialized"):
            collective(gt.ones(2))


def test_a_world_of_one_process():
    # dinov2 calls dist.all_reduce unconditionally after init_process_group(world_size=1)
    import gt.distributed as dist
    dist.init_process_group("gloo", world_size=1, rank=0)
    try:
        assert dist.is_initialized() and dist.get_backend() == "gloo"
        x = gt.ones(2)
        dist.all_reduce(x)
        assert x.tolist() == [1.0, 1.0] and dist.all_reduce(x, async_op=True).wait()
        out = [gt.zeros(2)]
        dist.all_gather(out, x * 3)
        assert out[0].tolist() == [3.0, 3.0]
        whole = gt.zeros(2)
        dist.all_gather_into_tensor(whole, x * 2)
        assert whole.tolist() == [2.0, 2.0]
        objects = [None]
        dist.all_gather_object(objects, {"a": 1})
        assert objects == [{"a": 1}]
        with pytest.raises(RuntimeError, match="no other rank"):
            dist.send(x, dst=1)
    finally:
        dist.destroy_process_group()
    assert not dist.is_initialized()
    with pytest.raises(RuntimeError, match="sharding config"):
        dist.init_process_group("gloo", world_size=2, rank=0)
