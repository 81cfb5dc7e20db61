"""gt.profiler: the client's timeline as Chrome trace-event JSON, and `gt trace summary`."""
import json
import os
import subprocess
import sys

import pytest

import gt
from gt import _tensor

HERE = os.path.basename(__file__)


def events(path):
    with open(path) as f:
        doc = json.load(f)
    return [e for e in doc["traceEvents"] if e["ph"] == "X"], [e for e in doc["traceEvents"] if e["ph"] == "M"]


def test_a_trace_has_each_op_and_sync_with_the_users_line(tmp_path):
    path = tmp_path / "out.json"
    x = gt.ones(4, 3)
    with gt.profiler.trace(str(path)):
        y = (x * 2.0).exp().sum(dim=1) + gt.tensor([1.0, 2.0, 3.0, 4.0])
        values = y.numpy()
    assert values.shape == (4,)
    slices, meta = events(path)
    ops = [e for e in slices if e["cat"] == "op"]
    assert [e["name"] for e in ops if e["name"] in ("mul", "exp", "sum")] == ["mul", "exp", "sum"]
    assert all(e["args"]["line"].startswith(f"{os.path.abspath(__file__)}:") for e in ops)
    assert next(e for e in ops if e["name"] == "sum")["args"]["shape"] == [4]
    assert next(e for e in ops if e["name"] == "upload")["args"]["shape"] == [4]  # gt.tensor's data
    (sync,) = [e for e in slices if e["cat"] == "sync"]
    assert sync["args"]["bytes"] == 16 and sync["dur"] >= 0
    assert all(e["ts"] >= ops[0]["ts"] for e in slices if e["pid"] == os.getpid())  # one clock, in microseconds
    assert meta[0]["name"] == "process_name" and meta[0]["args"]["name"].startswith("gt client ")
    assert _tensor._trace is None  # off again after the block: nothing is recorded
    (x + 1).numpy()
    assert len(events(path)[0]) == len(slices)


def test_a_foreach_call_shares_its_time_among_its_ops(tmp_path):
    # An optimizer's step issues each update line for every parameter in one call: each op gets
    # its share of the call, so `gt trace summary`'s issue totals count the call once.
    path = tmp_path / "out.json"
    params = [gt.ones(3, requires_grad=True) for _ in range(4)]
    for p in params:
        p.grad = gt.ones(3)
    opt = gt.optim.SGD(params, lr=0.1)
    with gt.profiler.trace(str(path)):
        opt.step()
        params[0].numpy()
    muls = sorted((e for e in events(path)[0] if e["cat"] == "op" and e["name"] == "mul"), key=lambda e: e["ts"])
    assert len(muls) == 4
    assert all(a["ts"] + a["dur"] <= b["ts"] + 1e-3 for a, b in zip(muls, muls[1:])), muls


def test_one_trace_at_a_time(tmp_path):
    with gt.profiler.trace(str(tmp_path / "a.json")):
        with pytest.raises(RuntimeError, match="already on"):
            with gt.profiler.trace(str(tmp_path / "b.json")):
                pass
    assert (tmp_path / "a.json").exists() and not (tmp_path / "b.json").exists()


def test_gt_trace_records_a_whole_run_and_gt_trace_summary_reads_it(tmp_path):
    path = tmp_path / "run.json"
    script = "import gt\nx = gt.ones(8)\nfor _ in range(3):\n    x = x * 2.0\nprint(x.sum().item())\n"
    p = subprocess.run([sys.executable, "-c", script], env=dict(os.environ, GT_TRACE=str(path)),
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    slices, _ = events(path)
    assert sum(e["name"] == "mul" for e in slices) == 3
    s = subprocess.run([sys.executable, "-m", "gt", "trace", "summary", str(path)], capture_output=True, text=True,
                       timeout=60)
    assert s.returncode == 0, s.stderr
    mul = next(line for line in s.stdout.splitlines() if line.startswith("mul "))
    assert mul.split()[1] == "3"  # count
    assert "waiting in 1 syncs" in s.stdout and "<string>:5" in s.stdout  # the .item() line


def test_gt_trace_summary_ranks_a_gpu_workers_kernels_by_device_time(tmp_path):
    """A CUDA worker's track has its kernels twice: as the host queued them ("kernel") and as
    the GPU ran them ("gpu", tid 1). The summary ranks them each way (a GPU run checks the real
    thing: test_cuda.py)."""
    from gt.profiler import summary

    def x(name, cat, ts, dur, tid=0):
        return {"name": name, "cat": cat, "ph": "X", "ts": ts, "dur": dur, "pid": 2, "tid": tid, "args": {}}

    doc = {"traceEvents": [
        {"name": "process_name", "ph": "M", "pid": 2, "args": {"name": "gt-worker 0 (cuda:0)"}},
        x("matmul", "kernel", 0, 10), x("sum", "kernel", 10, 5),       # queued in 15 us
        x("matmul", "gpu", 12, 100, 1), x("sum", "gpu", 112, 3000, 1),  # ran for 3.1 ms
    ]}
    path = tmp_path / "gpu.json"
    path.write_text(json.dumps(doc))
    text = summary(str(path))
    host, gpu = text.split("top kernels on the GPU (device time)")
    assert host.index("matmul") < host.index("sum ")  # by host time: the matmul's 10 us first
    assert gpu.index("sum ") < gpu.index("matmul")   # by device time: the sum's 3 ms first
    row = next(line for line in gpu.splitlines() if line.startswith("gt-worker 0 (cuda:0) GPU"))
    assert row.split()[4] == "3.10"  # busy ms on the GPU


def test_gt_trace_plot_draws_the_timeline(tmp_path):
    path, png = tmp_path / "t.json", tmp_path / "timeline.png"
    with gt.profiler.trace(str(path)):
        (gt.ones(5) * 3.0).sum().item()
    p = subprocess.run([sys.executable, "-m", "gt", "trace", "plot", str(path), "-o", str(png)], capture_output=True,
                       text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    slices, _ = events(path)
    assert p.stdout.strip() == f"{png}: {len(slices)} slices"
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


MLP_STEP = """
import sys
sys.path.insert(0, sys.argv[2])
import numpy as np
import gt
import fashion_mnist
gt.connect(sys.argv[1])
gt.load_config(sys.argv[3])
gt.manual_seed(0)
with gt.signal.context("params"):
    model = fashion_mnist.MLP()
    opt = gt.optim.Adam(model.parameters(), lr=1e-3)
rng = np.random.default_rng(0)
x, y = rng.random((64, 784), dtype=np.float32), rng.integers(0, 10, 64)
fashion_mnist.train_step(model, opt, x, y).item()  # compiled outside the trace
with gt.profiler.trace(sys.argv[4]):
    fashion_mnist.train_step(model, opt, x, y).item()
"""


def test_a_trace_of_an_mlp_step_has_the_client_the_dispatcher_and_every_worker_on_one_clock(tmp_path):
    # Two workers, data parallel: the step's all_reduces run on both.
    from conftest import Daemons, ROOT
    path = tmp_path / "step.json"
    d = Daemons(workers=2)
    try:
        p = subprocess.run([sys.executable, "-c", MLP_STEP, f"127.0.0.1:{d.port}", os.path.join(ROOT, "examples"),
                            os.path.join(ROOT, "examples", "configs", "data_parallel.yaml"), str(path)],
                           capture_output=True, text=True, timeout=300)
    finally:
        d.stop()
    assert p.returncode == 0, p.stderr
    with open(path) as f:
        doc = json.load(f)  # valid JSON
    slices = [e for e in doc["traceEvents"] if e["ph"] == "X"]
    assert all({"name", "cat", "ts", "dur", "pid", "tid"} <= e.keys() and e["dur"] >= 0 for e in slices)
    names = {e["pid"]: e["args"]["name"] for e in doc["traceEvents"] if e["ph"] == "M" and e["name"] == "process_name"}
    by_label = {label.split(" (")[0].rsplit(" ", 1)[0] if label.startswith("gt client") else label.split(" (")[0]: pid
                for pid, label in names.items()}
    assert set(by_label) == {"gt client", "gt-dispatcher", "gt-worker 0", "gt-worker 1"}, names
    cats = lambda pid: {e["cat"] for e in slices if e["pid"] == pid}  # noqa: E731
    assert {"op", "sync"} <= cats(by_label["gt client"])
    assert {"dispatch", "send"} <= {e["name"] for e in slices if e["pid"] == by_label["gt-dispatcher"]}
    for w in ("gt-worker 0", "gt-worker 1"):
        pid = by_label[w]
        assert "program" in cats(pid) and "collective" in cats(pid), (w, cats(pid))
        programs = [e for e in slices if e["pid"] == pid and e["cat"] == "program"]
        for k in (e for e in slices if e["pid"] == pid and e["cat"] in ("kernel", "region", "collective")):
            assert any(p["ts"] <= k["ts"] and k["ts"] + k["dur"] <= p["ts"] + p["dur"] + 1e-3 for p in programs), k
        memory = [e for e in doc["traceEvents"] if e["ph"] == "C" and e["pid"] == pid]  # allocations and frees
        assert memory and max(e["args"]["live bytes"] for e in memory) > 0
        reduce = next(e for e in slices if e["pid"] == pid and e["name"] == "all_reduce")
        assert reduce["args"]["bytes"] > 0 and reduce["args"]["workers"] == [0, 1]
    clock = doc["otherData"]["clock"]
    assert abs(clock["dispatcher_offset_ns"]) < 1e6  # loopback: one machine, one monotonic clock
    assert len(clock["workers"]) == 2 and all(abs(w["offset_ns"]) < 1e6 for w in clock["workers"].values())
    # The client's sync ends after the worker programs it waited for (one clock).
    sync = max((e for e in slices if e["cat"] == "sync"), key=lambda e: e["ts"])
    first = min(e["ts"] for e in slices if e["pid"] == by_label["gt-worker 0"] and e["cat"] == "program")
    assert sync["ts"] + sync["dur"] >= first
    text = subprocess.run([sys.executable, "-m", "gt", "trace", "summary", str(path)], capture_output=True, text=True,
                          timeout=60).stdout
    assert "top kernels (all workers)" in text and "gt-worker 1" in text
    picture = tmp_path / "step.png"
    subprocess.run([sys.executable, "-m", "gt", "trace", "plot", str(path), "-o", str(picture)], check=True, timeout=120)
    assert picture.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_the_dispatcher_track_has_each_pass_of_a_new_batch_and_the_client_track_its_flushes(tmp_path):
    path = tmp_path / "t.json"
    with gt.profiler.trace(str(path)):
        (gt.ones(5, 7) * 3.0).sum().item()  # a batch the plan cache has not seen: capture and passes
    slices, meta = events(path)
    names = {m["pid"]: m["args"]["name"] for m in meta if m["name"] == "process_name"}
    dispatcher = [e for e in slices if names.get(e["pid"]) == "gt-dispatcher"]
    assert any(e["name"] == "dispatch" and e["args"]["plan"] == "miss" for e in dispatcher)
    (span,) = [e for e in dispatcher if e["name"] == "passes"]
    passes = [e for e in dispatcher if e["cat"] == "pass"]
    assert {"gt-apply-signals", "gt-propagate-sharding", "gt-split-by-worker", "gt-mark-hot-regions"} <= {
        e["name"] for e in passes}
    assert all(span["ts"] <= e["ts"] and e["ts"] + e["dur"] <= span["ts"] + span["dur"] + 1e-3 for e in passes)
    flushes = [e for e in slices if e["pid"] == os.getpid() and e["cat"] == "flush"]
    assert flushes and sum(e["args"]["instructions"] for e in flushes) >= 3  # full, mul, sum


def test_a_traced_step_replays_the_plan_of_the_untraced_steps(tmp_path):
    # The tensors of the step before, freed as the trace starts, must not be sent on their own:
    # the traced step's batches would differ from an untraced step's, and the dispatcher would
    # capture it anew (a plan-cache miss: 33 ms of a GPT-2 step's trace on an H200).
    w = gt.randn(64, 64, requires_grad=True)
    opt = gt.optim.SGD([w], lr=0.01)

    def step():
        x = gt.randn(32, 64)
        loss = ((x @ w).tanh() ** 2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        return loss.item()

    for _ in range(4):
        step()
    with gt.profiler.trace(str(tmp_path / "step.json")):
        step()
    slices, _ = events(tmp_path / "step.json")
    plans = [e["args"]["plan"] for e in slices if e["name"] == "dispatch"]
    assert plans and all(p == "hit" for p in plans), plans
