"""torch.profiler's API on GT's trace: profile, schedule, record_function, key_averages,
export_chrome_trace, tensorboard_trace_handler; torch.autograd.profiler."""
import gzip
import json
import os

import pytest

import gt
from gt.profiler import ProfilerAction, ProfilerActivity, profile, record_function, schedule, tensorboard_trace_handler


def step(x):
    with record_function("my_step"):
        return ((x * 2 + 1).relu() @ x.T).sum().item()


def test_profile_records_ops_kernels_and_spans():
    x = gt.randn(16, 16)
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA], record_shapes=True) as prof:
        step(x)
    rows = {r.key: r for r in prof.key_averages()}
    assert rows["my_step"].count == 1 and rows["my_step"].cpu_time_total > 0
    assert rows["matmul"].count == 1 and rows["matmul"].device_time_total > 0  # the worker ran it
    text = prof.key_averages().table(sort_by="cpu_time_total", row_limit=3)
    assert "Name" in text and "# of Calls" in text and "Self CPU time total" in text
    assert len([line for line in text.splitlines() if line and not line.startswith(("-", "Name", "Self"))]) == 3
    with pytest.raises(ValueError, match="unknown sort_by"):
        prof.key_averages().table(sort_by="nonsense")
    assert gt.profiler._tensor._trace is None  # recording stopped with the block


def test_export_chrome_trace_and_gzip(tmp_path):
    with profile() as prof:
        step(gt.randn(4, 4))
    prof.export_chrome_trace(str(tmp_path / "t.json"))
    events = json.load(open(tmp_path / "t.json"))["traceEvents"]
    assert any(e.get("cat") == "user_annotation" and e["name"] == "my_step" for e in events)
    assert any(e.get("cat") == "kernel" for e in events)
    prof.export_chrome_trace(str(tmp_path / "t.json.gz"))
    assert json.load(gzip.open(tmp_path / "t.json.gz", "rt"))["traceEvents"]


def test_schedule_actions_follow_pytorch():
    s = schedule(skip_first=1, wait=1, warmup=1, active=2, repeat=1)
    assert [s(i) for i in range(7)] == [ProfilerAction.NONE, ProfilerAction.NONE, ProfilerAction.WARMUP,
                                        ProfilerAction.RECORD, ProfilerAction.RECORD_AND_SAVE, ProfilerAction.NONE,
                                        ProfilerAction.NONE]
    with pytest.raises(ValueError):
        schedule(wait=0, warmup=0, active=0)


def test_a_schedule_traces_only_its_active_steps(tmp_path):
    x = gt.randn(8, 8)
    saved = []

    def ready(prof):
        saved.append(sum(r.count for r in prof.key_averages() if r.key == "my_step"))
        tensorboard_trace_handler(str(tmp_path / "tb"), worker_name="w")(prof)

    with profile(schedule=schedule(wait=1, warmup=1, active=2, repeat=2), on_trace_ready=ready) as prof:
        for _ in range(10):
            step(x)
            prof.step()
    assert saved == [2, 2]  # two cycles, each with its two active steps
    files = sorted(os.listdir(tmp_path / "tb"))
    assert len(files) == 2 and all(f.startswith("w.") and f.endswith(".pt.trace.json") for f in files)


def test_autograd_profiler_spelling(tmp_path):
    import gt.autograd.profiler as ap
    x = gt.randn(4, 4, requires_grad=True)
    with ap.profile(use_cuda=False) as prof:
        (x * x).sum().backward()
        x.grad.sum().item()
    assert any(r.key == "mul" for r in prof.key_averages())
    with ap.profile(enabled=False) as off:
        (x * 3).sum().item()
    with pytest.raises(RuntimeError, match="no finished trace"):
        off.key_averages()
    with gt.profiler.trace(str(tmp_path / "outer.json")):
        with pytest.raises(RuntimeError, match="already on"):
            with profile():
                pass


def test_a_trace_written_to_a_pipe_leaves_it_a_pipe(tmp_path):
    # A trace path that is not a regular file (/dev/null, a pipe) is written into, not renamed
    # over: the rename of the atomic write would have replaced it with a plain file.
    import stat
    import threading
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    got = []
    reader = threading.Thread(target=lambda: got.append(open(fifo).read()))
    reader.start()
    with gt.profiler.trace(str(fifo)):
        (gt.ones(2) + 1).numpy()
    reader.join(30)
    assert stat.S_ISFIFO(os.stat(fifo).st_mode)
    assert json.loads(got[0])["traceEvents"]


def test_record_function_as_a_decorator_of_a_recursive_function():
    @record_function("fib")
    def fib(n):
        return n if n < 2 else fib(n - 1) + fib(n - 2)
    with profile() as prof:
        assert fib(5) == 5
    spans = [e for e in prof.events() if e.get("cat") == "user_annotation"]
    assert len(spans) == 15 and all(e["dur"] >= 0 for e in spans)
    outer = max(spans, key=lambda e: e["dur"])
    assert all(outer["ts"] <= e["ts"] and e["ts"] + e["dur"] <= outer["ts"] + outer["dur"] + 1e-3 for e in spans)


def test_memory_columns_input_shapes_and_stacks_as_the_profiler_recipe_uses_them(tmp_path):
    lin = gt.nn.Linear(64, 32)
    with profile(activities=[ProfilerActivity.CPU], record_shapes=True, profile_memory=True, with_stack=True) as prof:
        lin(gt.ones(8, 64))
        lin(gt.ones(4, 64))
    # group_by_input_shape: one row per (op, operand shapes), with PyTorch's column.
    table = prof.key_averages(group_by_input_shape=True).table(row_limit=20)
    assert "Input Shapes" in table and "CPU Mem" in table
    assert "[[8, 64], [64, 32]]" in table and "[[4, 64], [64, 32]]" in table
    # Memory: the bytes of each op kind's results (float32): matmul made 8x32 and 4x32.
    rows = {r.key: r for r in prof.key_averages()}
    assert rows["matmul"].self_cpu_memory_usage == (8 + 4) * 32 * 4 and rows["matmul"].count == 2
    by_memory = prof.key_averages().table(sort_by="self_cpu_memory_usage", row_limit=1)
    assert by_memory.splitlines()[3].split()[0] == "transpose"  # W^T, 64x32 floats, twice: the most bytes
    with pytest.raises(ValueError, match="unknown sort_by"):
        prof.key_averages().table(sort_by="flops")
    path = tmp_path / "stacks.txt"
    prof.export_stacks(str(path))
    lines = path.read_text().splitlines()
    assert lines and all(len(line.rsplit(" ", 1)) == 2 and line.rsplit(" ", 1)[1].isdigit() for line in lines)
    assert any(line.split(" ")[0].endswith(";matmul") and "test_torch_profiler.py" in line for line in lines)
