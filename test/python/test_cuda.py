"""The CUDA worker from Python. Without a GPU: asking for one fails at start-up with the reason
(the daemon's own message), never a hang. With a GPU (the device machine): a training script
runs unchanged on `GT_DEVICE=cuda` and matches the CPU worker."""
import os
import subprocess
import sys
import textwrap

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))


def has_gpu():
    try:
        return subprocess.run(["nvidia-smi", "-L"], capture_output=True, timeout=20).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


def run(script, device, tmp_path, **env):
    e = dict(os.environ, GT_DEVICE=device, GT_CACHE_DIR=str(tmp_path / "cache"), **env)
    return subprocess.run([sys.executable, "-c", textwrap.dedent(script)], capture_output=True, text=True,
                          timeout=600, env=e)


MLP = """
    import gt, numpy as np
    gt.manual_seed(0)
    rng = np.random.default_rng(0)
    x = rng.standard_normal((64, 784)).astype(np.float32)
    y = rng.integers(0, 10, 64)
    model = gt.nn.Sequential(gt.nn.Linear(784, 256), gt.nn.ReLU(), gt.nn.Linear(256, 10))
    opt = gt.optim.Adam(model.parameters(), lr=1e-3)
    for step in range(20):
        loss = gt.nn.functional.cross_entropy(model(gt.tensor(x)), gt.tensor(y))
        opt.zero_grad()
        loss.backward()
        opt.step()
        print(loss.item())
    stats = gt.debug.stats()
    assert stats["region_replays"] > 0 and stats["region_verify_failures"] == 0, stats
"""


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
    cpu = run(MLP, "cpu", tmp_path)
    assert cpu.returncode == 0, cpu.stderr
    gpu = run(MLP, "cuda", tmp_path, GT_JIT_VERIFY="1", GT_HOT_AFTER="1", GT_JIT_SYNC="1")
    assert gpu.returncode == 0, gpu.stderr
    a = [float(v) for v in cpu.stdout.split()]
    b = [float(v) for v in gpu.stdout.split()]
    assert len(a) == len(b) == 20
    assert b[-1] < b[0]
    for u, v in zip(a, b):
        assert abs(u - v) <= 1e-3 * max(1.0, abs(u))
