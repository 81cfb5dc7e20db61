"""Scripts written for the original GT (../shared/reference) run unchanged."""
import numpy as np

import gt
from conftest import check


def test_original_client_nn_script():
    from gt.client import nn
    from gt.client.tensor import randn, zeros, from_numpy

    class MyModel(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc1 = nn.Linear(10, 20)
            self.fc2 = nn.Linear(20, 1)
            self._parameters = self.fc1.parameters() + self.fc2.parameters()

        def forward(self, x):
            x = self.fc1(x).relu()
            return self.fc2(x)

    model = MyModel()
    assert len(model.parameters()) == 4
    x = randn(8, 10)
    target = from_numpy(np.ones((8, 1), dtype=np.float32))
    loss = nn.mse_loss(model(x), target)
    loss.backward()
    assert all(p.grad is not None for p in model.parameters())
    assert zeros(2).shape == (2,)
    assert nn.cross_entropy_loss(randn(4, 3), gt.tensor([0, 1, 2, 0])).item() > 0
    check(nn.relu(gt.tensor([-1.0, 2.0])), [0.0, 2.0])


def test_original_gt_nn_sgd_training_loop():
    from gt.nn import Module, Linear, SGD

    class MLP(Module):
        def __init__(self):
            super().__init__()
            self.fc1 = Linear(4, 16)
            self.fc2 = Linear(16, 1)

        def forward(self, x):
            return self.fc2(self.fc1(x).relu())

    gt.manual_seed(0)
    rng = np.random.default_rng(0)
    X = rng.standard_normal((64, 4)).astype(np.float32)
    y = (X @ np.array([[1.0], [-2.0], [0.5], [0.0]], dtype=np.float32))
    X_train, y_train = gt.from_numpy(X), gt.from_numpy(y)
    model = MLP()
    optimizer = SGD(model.parameters(), lr=0.05)
    losses = []
    for epoch in range(60):
        pred = model(X_train)
        loss = ((pred - y_train) ** 2).mean()
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        losses.append(loss.item())
    assert losses[-1] < 0.1 * losses[0]


def test_tensor_id_data_and_tape():
    a = gt.tensor([1.0, 2.0, 3.0], requires_grad=True)
    b = a.relu()
    loss = b.sum()
    loss.backward()
    data = a.grad.data
    assert isinstance(a.id, int) and data.shape == (3,) and data.dtype == gt.float32
    check(data.numpy(), [1.0, 1.0, 1.0])
    assert np.asarray(data).tolist() == [1.0, 1.0, 1.0]
    tape = gt.debug.get_tape()
    ops = [e["op"] for e in tape]
    assert "relu" in ops and "sum" in ops
    relu = [e for e in tape if e["op"] == "relu" and e["id"] == b.id][0]
    assert relu["inputs"] == [a.id] and relu["shape"] == (3,) and "test_compat.py" in relu["location"]
    assert relu["text"].startswith(f"TENSOR[{b.id}] := relu TENSOR[{a.id}]")


def test_tape_keeps_the_last_10000_instructions_oldest_first():
    # Past 10000 the tape overwrites its oldest entries in place: it still reads oldest first,
    # each entry whole (its own inputs, shape and line), however long the previous one's were.
    x = gt.ones(2, 3)
    made = []
    for i in range(6000):
        y = x.reshape(6) if i % 2 else x + float(i)
        made.append((y.id, "reshape" if i % 2 else "add", y.shape))
        del y  # a free per op: 12000 entries and more
    tape = gt.debug.get_tape()
    assert len(tape) == 10000
    times = [e["time"] for e in tape]
    assert times == sorted(times)
    results = [e for e in tape if e["op"] != "free" and e["op"] != "full"]
    assert [(e["id"], e["op"], e["shape"]) for e in results] == made[-len(results):]
    assert all(e["inputs"][0] == x.id and "test_compat.py" in e["location"] for e in results)
    assert tape[-1]["op"] in ("add", "reshape", "free")


def test_instruction_log_and_batch_size_environment(tmp_path):
    import subprocess
    import sys
    log = tmp_path / "ops.log"
    script = "import gt\na = gt.ones(2, 3)\nprint((a * 2).sum().item())\n"
    env = dict(__import__("os").environ, GT_INSTRUCTION_LOG=str(log), GT_WORKER_BATCH_SIZE="1")
    out = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "12.0"
    lines = log.read_text().splitlines()
    assert any("recv mul" in line and "<string>:3" in line for line in lines), lines
    env["GT_WORKER_BATCH_SIZE"] = "zero"
    bad = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=120)
    assert bad.returncode != 0 and "GT_WORKER_BATCH_SIZE must be a positive integer" in bad.stderr


def test_first_batch_size_environment():
    """GT_FIRST_BATCH_SIZE=n: the first batch after each read holds at most n ops (the worker
    starts while the client issues the rest); the results are the same."""
    import subprocess
    import sys
    script = ("import gt\nx = gt.ones(3)\nx.sum().item()\nb = gt.debug.stats()['batches']\n"
              "for _ in range(40):\n    x = x + 1\n"
              "print(x.sum().item(), gt.debug.stats()['batches'] - b)\n")
    batches = {}
    for n in ("", "8"):
        env = dict(__import__("os").environ, GT_FIRST_BATCH_SIZE=n)
        out = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=120)
        assert out.returncode == 0, out.stderr
        value, batches[n] = out.stdout.split()
        assert float(value) == 123.0
    assert int(batches["8"]) > int(batches[""]), batches
    env = dict(__import__("os").environ, GT_FIRST_BATCH_SIZE="-3")
    bad = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=120)
    assert bad.returncode != 0 and "GT_FIRST_BATCH_SIZE must be a non-negative integer" in bad.stderr
