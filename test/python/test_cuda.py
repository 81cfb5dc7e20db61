"""The CUDA worker from Python. Without a GPU: asking for one fails at start-up with the reason
(the daemon's own message), never a hang. With a GPU (the device machine): a training script
runs unchanged on `GT_DEVICE=cuda` and matches the CPU worker."""
import os
import subprocess
import sys
import textwrap
import pytest



def has_gpu():
    try:
        return subprocess.run(["nvidia-smi", "-L"], capture_output=True, timeout=20).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


def run(script, device, tmp_path, **env):
    e = dict(os.environ, GT_DEVICE=device, GT_CACHE_DIR=str(tmp_path / "cache"), **env)
    return subprocess.run([sys.executable, "-c", textwrap.dedent(script)], capture_output=True, text=True,
                          timeout=600, env=e)


@pytest.mark.skipif(has_gpu(), reason="this machine has a GPU")
def test_cuda_worker_without_gpu_fails_with_the_reason(tmp_path):
    r = run("import gt; print(gt.randn(3).numpy())", "cuda", tmp_path)
    assert r.returncode != 0
    assert "exited during start-up" in r.stderr
    assert "cannot use device 'cuda:0'" in r.stderr, r.stderr
    assert "libcuda.so.1" in r.stderr or "no GPU" in r.stderr, r.stderr


def test_unknown_device_is_refused(tmp_path):
    r = run("import gt; print(gt.randn(3).numpy())", "tpu", tmp_path)
    assert r.returncode != 0
    assert "unknown device 'tpu'" in r.stderr, r.stderr


@pytest.mark.skipif(not has_gpu(), reason="no GPU on this machine (nvidia-smi -L fails)")
def test_mlp_on_the_gpu_matches_the_cpu(tmp_path):
    from test_jit import MLP_STEPS, run_script  # the same training script, on each device

    cpu = run_script(MLP_STEPS, [20], tmp_path, GT_DEVICE="cpu")
    gpu = run_script(MLP_STEPS, [20], tmp_path, GT_DEVICE="cuda", GT_JIT_VERIFY="1")
    s = gpu["stats"]
    assert s["region_replays"] > 0 and s["region_verify_failures"] == 0, s
    a, b = cpu["results"], gpu["results"]
    assert len(a) == len(b) == 20
    assert b[-1] < b[0]
    for u, v in zip(a, b):
        assert abs(u - v) <= 1e-3 * max(1.0, abs(u))


@pytest.mark.skipif(not has_gpu(), reason="no GPU on this machine (nvidia-smi -L fails)")
def test_api_harness_and_gpt_on_the_gpu(tmp_path):
    """Every op of the API harness (all dtypes, float16/bfloat16 included), nn and the char GPT,
    on a CUDA worker with the same NumPy references and tolerances as on the CPU."""
    here = os.path.dirname(os.path.abspath(__file__))
    e = dict(os.environ, GT_DEVICE="cuda", GT_CACHE_DIR=str(tmp_path / "cache"))
    r = subprocess.run([sys.executable, "-m", "pytest", "-q", "-x", "-p", "no:cacheprovider", "test_api.py",
                        "test_nn.py", "test_char_gpt.py"], cwd=here, capture_output=True, text=True, timeout=3000,
                       env=e)
    assert r.returncode == 0, r.stdout[-4000:] + r.stderr[-2000:]


@pytest.mark.skipif(not has_gpu(), reason="no GPU on this machine (nvidia-smi -L fails)")
def test_a_trace_on_the_gpu_has_each_kernels_device_time(tmp_path):
    """On a CUDA worker, gt.profiler's worker track has a second thread, "GPU (device time)":
    each kernel again as it ran on the GPU, never before the host queued it, and `gt trace
    summary` ranks the kernels by that time."""
    import json
    path = tmp_path / "gpu.trace.json"
    r = run(f"""
        import gt, gt.profiler
        a = gt.randn(1024, 1024)
        gt.synchronize()
        with gt.profiler.trace({str(path)!r}):
            b = a
            for _ in range(5):
                b = (b @ a).tanh()
            print(float(b.sum().item()))
        """, "cuda", tmp_path, GT_JIT="0")
    assert r.returncode == 0, r.stderr
    events = json.loads(path.read_text())["traceEvents"]
    host = [e for e in events if e.get("cat") == "kernel"]
    gpu = [e for e in events if e.get("cat") == "gpu"]
    assert [e["name"] for e in gpu].count("matmul") == 5, [e["name"] for e in gpu]
    assert all(e["tid"] == 1 for e in gpu) and all(e["tid"] == 0 for e in host)
    queued = {}
    for e in host:
        queued.setdefault(e["name"], []).append(e["ts"])
    for e in gpu:
        assert e["dur"] >= 0
        assert e["ts"] >= min(queued[e["name"]]) - 50, e  # microseconds: the clocks' agreement
    summary = subprocess.run([sys.executable, "-m", "gt", "trace", "summary", str(path)], capture_output=True,
                             text=True, timeout=60)
    assert "top kernels on the GPU (device time)" in summary.stdout, summary.stdout + summary.stderr
    assert "matmul" in summary.stdout.split("top kernels on the GPU")[1]
