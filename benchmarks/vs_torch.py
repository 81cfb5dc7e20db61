"""GT beside PyTorch eager and torch.compile, the same model code on each, on one device.

Workloads (each timed after warm-up iterations shaped like the timed ones):
- per-op overhead: 1000 dependent `x = x + 1.0` on 256 float32, then one read; microseconds
  per op (what a long chain of small ops costs: issue, dispatch, launch), and the issue alone
  (the loop, before the read: what the Python line costs the user while the device works),
  also with autograd recording (x requires grad: each op stores its backward node);
- the `.item()` round trip of a value already computed, p50 and p99 over 2000 reads;
- the fused chain gelu(x * w + b) * y over 1M float32 (gelu in its tanh form, Hendrycks &
  Gimpel 2016); milliseconds per iteration, the iterations queued back to back (each result
  kept), one read at the end;
- the MLP training step (784-256-128-10, ReLU, cross-entropy, Adam, batch 128, synthetic data),
  each step ending by reading the loss, as a training loop that logs it does;
- the GPT training step of examples/char_gpt.py (default model: 2 layers, 4 heads, embd 128,
  block 64, batch 32, AdamW, gradients clipped to norm 1 as the example's loop does), each
  step ending by reading the loss;
- generation with examples/char_gpt.py's model, its context one token longer each step (no
  padding, as minGPT's generate): milliseconds per token over lengths it has not seen, then
  over the same lengths again;
- the CNN training step of examples/cnn_fashion_mnist.py's model (Conv2d 1-16-32 3x3, BatchNorm2d,
  ReLU, MaxPool2d 2, Linear 1568-128-10, dropout; Adam, batch 64 of 28x28, synthetic data);
- a ResNet training step (He et al. 2016: a 7x7/2 stem with batch norm and a 3x3/2 max pool,
  then basic blocks of 64-128-256 channels, two per stage, strided 1x1 shortcuts; SGD with
  momentum, batch 16 of 3x112x112, synthetic data): the convolution-bound step of the ResNet
  scripts (torchvision's resnet18 at 224x224 has the same layers, one stage more).

For the two training steps it also prints the CPU time per step (all of GT's processes summed,
client and auto-started daemons, against PyTorch's one process) and, for GT, the kernels and
fused regions compiled during the timed steps (a steady state compiles nothing).

GT runs on GT_DEVICE (cpu unless set; `GT_DEVICE=cuda` for the GPU) with its fusion on
(GT_JIT_SYNC=1, so the warm-up compiles the hot regions); PyTorch on CUDA when it sees a GPU,
else on the CPU. torch.compile wraps the model (MLP, GPT) or the chain function; it is not
used for the per-op loop. Each configuration runs in its own process. PyTorch is not a GT
dependency: run this with a Python that has both `gt` and `torch` (the GPU machine's python3,
through the device bundle's `./run.sh python benchmarks/vs_torch.py`). Run:

    python benchmarks/vs_torch.py [--quick] [--only gt,torch,torch.compile] [--workloads mlp,gpt,...]
"""
import argparse
import contextlib
import json
import os
import subprocess
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
EXAMPLES = os.path.join(HERE, "..", "examples")
WORKLOADS = ["per-op", "item", "chain", "mlp", "gpt", "generate", "cnn", "resnet"]
ROWS = {"per-op": ["per-op", "per-op issue", "per-op issue, grad"], "item": ["item p50", "item p99"], "chain": ["chain"],
        "mlp": ["mlp", "mlp cpu", "mlp compiles"], "gpt": ["gpt", "gpt cpu", "gpt compiles"],
        "generate": ["generate", "generate again", "generate compiles"],
        "cnn": ["cnn", "cnn cpu", "cnn compiles"], "resnet": ["resnet", "resnet cpu", "resnet compiles"]}
UNITS = {"per-op": ("us per op", 1e6), "per-op issue": ("us per op", 1e6), "per-op issue, grad": ("us per op", 1e6),
         "item p50": ("us", 1e6),
         "item p99": ("us", 1e6), "chain": ("ms per iteration", 1e3), "mlp": ("ms per step", 1e3),
         "mlp cpu": ("CPU ms per step", 1e3), "mlp compiles": ("in timed steps", 1), "gpt": ("ms per step", 1e3),
         "gpt cpu": ("CPU ms per step", 1e3), "gpt compiles": ("in timed steps", 1),
         "generate": ("ms per token", 1e3), "generate again": ("ms per token", 1e3),
         "generate compiles": ("in timed tokens", 1),
         "cnn": ("ms per step", 1e3), "cnn cpu": ("CPU ms per step", 1e3), "cnn compiles": ("in timed steps", 1),
         "resnet": ("ms per step", 1e3), "resnet cpu": ("CPU ms per step", 1e3),
         "resnet compiles": ("in timed steps", 1)}


def backend_module(backend):
    """`gt`, or `torch` on its best device standing in for it (gt.nn -> torch.nn, ...)."""
    if backend == "gt":
        import gt
        return gt, "GT_DEVICE=" + os.environ.get("GT_DEVICE", "cpu")
    import torch
    device = "cuda" if torch.cuda.is_available() else "cpu"
    torch.set_default_device(device)
    torch.set_num_threads(os.cpu_count() or 1)
    if not hasattr(torch.signal, "context"):  # GT's named signals mean nothing to PyTorch
        torch.signal.context = lambda name, backward=None: contextlib.nullcontext()
    sys.modules.update({"gt": torch, "gt.nn": torch.nn, "gt.nn.functional": torch.nn.functional,
                        "gt.optim": torch.optim})
    return torch, torch.cuda.get_device_name() if device == "cuda" else "cpu"


def sync(lib, value):
    """Waits for `value` (and what was queued before it)."""
    if lib.__name__ == "torch" and value.is_cuda:
        lib.cuda.synchronize()
    return float(value.reshape(-1)[0].item())


def training_step(loss_of, opt, clip=None):
    """A step: the loss, its backward, with `clip` (lib.nn.utils.clip_grad_norm_, model) the
    gradients clipped to norm 1.0, the optimizer's step, then reading the loss (as a loop that
    logs it does; the client cuts a batch at each read). Returns the loss's value."""
    def step():
        loss = loss_of()
        opt.zero_grad()
        loss.backward()
        if clip is not None:
            clip[0](clip[1].parameters(), 1.0)
        opt.step()
        return loss.item()
    return step


def timed(fn, warmup, iters):
    for _ in range(warmup):
        fn()
    start = time.perf_counter()
    for _ in range(iters):
        fn()
    return (time.perf_counter() - start) / iters


def _proc_cpu_seconds(pid):
    fields = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")  # utime + stime


def cpu_seconds(lib):
    """CPU time used so far by this process and, for GT, the daemons it started."""
    t = os.times()
    total = t.user + t.system
    if lib.__name__ == "gt":
        from gt import _runtime
        total += sum(_proc_cpu_seconds(p.pid) for p in _runtime._processes if p.poll() is None)
    return total


def compiles(lib):
    """Kernels and fused regions GT's workers have compiled so far (0 for PyTorch)."""
    if lib.__name__ != "gt":
        return 0
    s = lib.debug.stats()
    return s["kernels_compiled"] + s["regions_compiled"] + s["region_fallbacks"]


def timed_step(lib, step, warmup, iters):
    """{"step": seconds per step, "cpu": CPU seconds per step, "compiles": during the timed steps}."""
    for _ in range(warmup):
        step()
    compiled, cpu = compiles(lib), cpu_seconds(lib)
    seconds = timed(step, 0, iters)
    return {"step": seconds, "cpu": (cpu_seconds(lib) - cpu) / iters, "compiles": compiles(lib) - compiled}


def per_op(lib, compiled, quick):
    x0 = lib.zeros(256)
    issued = []

    def run():
        x = x0
        start = time.perf_counter()
        for _ in range(1000):
            x = x + 1.0
        issued.append(time.perf_counter() - start)
        sync(lib, x)
    seconds = timed(run, 1 if quick else 2, 2 if quick else 10) / 1000
    # The same loop recording autograd history: x requires grad, so every op stores its node.
    recorded = []
    for _ in range(3 if quick else 10):
        x = lib.zeros(256, requires_grad=True)
        start = time.perf_counter()
        for _ in range(1000):
            x = x + 1.0
        recorded.append(time.perf_counter() - start)
        sync(lib, x)
        del x
    return {"per-op": seconds, "per-op issue": min(issued) / 1000, "per-op issue, grad": min(recorded) / 1000}


def item(lib, compiled, quick):
    x = lib.ones(4).sum()
    samples = []
    for i in range(200 + (300 if quick else 2000)):
        start = time.perf_counter()
        x.item()
        if i >= 200:
            samples.append(time.perf_counter() - start)
    return {"item p50": float(np.percentile(samples, 50)), "item p99": float(np.percentile(samples, 99))}


def chain(lib, compiled, quick):
    n = 1 << 20
    rng = np.random.default_rng(0)
    x, w, b, y = (lib.tensor(rng.standard_normal(n).astype(np.float32)) for _ in range(4))

    def f(x, w, b, y):
        u = x * w + b
        return 0.5 * u * (1 + (0.7978845608028654 * (u + 0.044715 * u * u * u)).tanh()) * y
    if compiled:
        import torch
        f = torch.compile(f)

    def run():
        # Every result is kept until the read: a result dropped unread is dead code, which GT's
        # hot-region marking leaves to its eager path (one op at a time), so dropping all but
        # the last measured that path nine times in ten, not the fused chain.
        outs = [f(x, w, b, y) for _ in range(10)]
        sync(lib, outs[-1])
    return {"chain": timed(run, 2 if quick else 3, 2 if quick else 20) / 10}


def mlp_step(lib, compiled=False):
    """A training step of a 784-256-128-10 MLP (Adam, batches of 128) on `lib`: training_step
    over four fixed batches in turn. benchmarks/trace_overhead.py times it too."""
    nn = lib.nn
    lib.manual_seed(0)
    model = nn.Sequential(nn.Linear(784, 256), nn.ReLU(), nn.Linear(256, 128), nn.ReLU(), nn.Linear(128, 10))
    opt = lib.optim.Adam(model.parameters(), lr=1e-3)
    return classifier_step(lib, model, opt, (128, 784), 10, compiled)


def mlp(lib, compiled, quick):
    r = timed_step(lib, mlp_step(lib, compiled), 3 if quick else 10, 3 if quick else 50)
    return {"mlp": r["step"], "mlp cpu": r["cpu"], "mlp compiles": r["compiles"]}


def gpt_training_step(lib, compiled=False):
    """A step of examples/char_gpt.py's default model (AdamW, gradients clipped to norm 1) on `lib`
    (gt, or torch standing in for it): training_step over a fresh batch each call. benchmarks/char_gpt.py times it too."""
    sys.path.insert(0, EXAMPLES)
    import char_gpt
    args = char_gpt.parse([])
    text = char_gpt.load_corpus(args.corpus)
    vocab = char_gpt.Vocabulary(text)
    data = vocab.encode(text)
    lib.manual_seed(0)
    rng = np.random.default_rng(0)
    model = char_gpt.GPT(len(vocab), args.block_size, args.layers, args.heads, args.embd)
    opt = lib.optim.AdamW(model.parameters(), lr=args.lr)
    forward = model
    if compiled:
        import torch
        forward = torch.compile(model)
    return training_step(lambda: char_gpt.loss_of(forward, *char_gpt.batch(data, rng, args.batch_size, args.block_size)),
                         opt, clip=(lib.nn.utils.clip_grad_norm_, model))


def gpt(lib, compiled, quick):
    r = timed_step(lib, gpt_training_step(lib, compiled), 3 if quick else 10, 2 if quick else 20)
    return {"gpt": r["step"], "gpt cpu": r["cpu"], "gpt compiles": r["compiles"]}


def generate(lib, compiled, quick):
    """examples/char_gpt.py's default model (untrained) generating, its context growing by one
    token per step (no padding, as minGPT's and nanoGPT's generate): every step is the same
    program at a new length. A warm-up generates over lengths 3-15; the timed run over lengths
    16-63, which it has not seen ("generate"), then over the same lengths again ("generate
    again")."""
    sys.path.insert(0, EXAMPLES)
    import char_gpt
    args = char_gpt.parse([])
    lib.manual_seed(0)
    model = char_gpt.GPT(65, args.block_size, args.layers, args.heads, args.embd)
    if compiled:
        import torch
        model = torch.compile(model)
    model.eval()
    rng = np.random.default_rng(0)

    def run(start, stop):
        ids = list(range(1, start + 1))
        with lib.no_grad():
            while len(ids) < stop:
                logits = model(lib.tensor(np.array([ids], dtype=np.int64)))[0, -1]
                p = logits.softmax(-1).float().cpu().numpy().astype(np.float64) if lib.__name__ == "torch" \
                    else logits.softmax(-1).numpy().astype(np.float64)
                ids.append(int(rng.choice(len(p), p=p / p.sum())))
        return stop - start
    run(3, 16)
    compiled_before = compiles(lib)
    times = []
    for _ in range(2):
        begin = time.perf_counter()
        n = run(16, args.block_size)
        times.append((time.perf_counter() - begin) / n)
    return {"generate": times[0], "generate again": times[1], "generate compiles": compiles(lib) - compiled_before}


def classifier_step(lib, model, opt, shape, classes, compiled):
    """training_step of `model` (cross-entropy over `classes`) on four fixed synthetic batches of
    `shape` in turn."""
    F = lib.nn.functional
    forward = model
    if compiled:
        import torch
        forward = torch.compile(model)
    rng = np.random.default_rng(0)
    batches = [(lib.tensor(rng.standard_normal(shape).astype(np.float32)),
                lib.tensor(rng.integers(0, classes, shape[0]))) for _ in range(4)]
    i = [0]

    def loss():
        x, y = batches[i[0] % len(batches)]
        i[0] += 1
        return F.cross_entropy(forward(x), y)
    return training_step(loss, opt)


def cnn_step(lib, compiled=False):
    """examples/cnn_fashion_mnist.py's model (written here against `lib`), Adam, batches of 64."""
    nn, F = lib.nn, lib.nn.functional
    lib.manual_seed(0)

    class Net(nn.Module):
        def __init__(self, width=16):
            super().__init__()
            self.conv1, self.bn1 = nn.Conv2d(1, width, 3, padding=1), nn.BatchNorm2d(width)
            self.conv2, self.bn2 = nn.Conv2d(width, 2 * width, 3, padding=1), nn.BatchNorm2d(2 * width)
            self.fc1, self.dropout, self.fc2 = nn.Linear(2 * width * 7 * 7, 128), nn.Dropout(0.25), nn.Linear(128, 10)

        def forward(self, x):
            x = F.max_pool2d(F.relu(self.bn1(self.conv1(x))), 2)
            x = F.max_pool2d(F.relu(self.bn2(self.conv2(x))), 2)
            return self.fc2(self.dropout(F.relu(self.fc1(lib.flatten(x, 1)))))
    model = Net()
    return classifier_step(lib, model, lib.optim.Adam(model.parameters(), lr=2e-3), (64, 1, 28, 28), 10, compiled)


def resnet_step(lib, compiled=False):
    """A small ResNet (basic blocks, He et al. 2016), SGD with momentum, batches of 16 3x112x112."""
    nn = lib.nn
    lib.manual_seed(0)

    class Block(nn.Module):
        def __init__(self, cin, cout, stride):
            super().__init__()
            self.conv1, self.bn1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False), nn.BatchNorm2d(cout)
            self.conv2, self.bn2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False), nn.BatchNorm2d(cout)
            self.shortcut = nn.Sequential()
            if stride != 1 or cin != cout:
                self.shortcut = nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout))

        def forward(self, x):
            y = self.bn1(self.conv1(x)).relu()
            return (self.bn2(self.conv2(y)) + self.shortcut(x)).relu()

    model = nn.Sequential(nn.Conv2d(3, 64, 7, 2, 3, bias=False), nn.BatchNorm2d(64), nn.ReLU(), nn.MaxPool2d(3, 2, 1),
                          Block(64, 64, 1), Block(64, 64, 1), Block(64, 128, 2), Block(128, 128, 1),
                          Block(128, 256, 2), Block(256, 256, 1), nn.AdaptiveAvgPool2d(1), nn.Flatten(),
                          nn.Linear(256, 100))
    opt = lib.optim.SGD(model.parameters(), lr=0.1, momentum=0.9, weight_decay=1e-4)
    return classifier_step(lib, model, opt, (16, 3, 112, 112), 100, compiled)


def cnn(lib, compiled, quick):
    r = timed_step(lib, cnn_step(lib, compiled), 3 if quick else 10, 3 if quick else 30)
    return {"cnn": r["step"], "cnn cpu": r["cpu"], "cnn compiles": r["compiles"]}


def resnet(lib, compiled, quick):
    r = timed_step(lib, resnet_step(lib, compiled), 2 if quick else 5, 2 if quick else 8)
    return {"resnet": r["step"], "resnet cpu": r["cpu"], "resnet compiles": r["compiles"]}


def child(backend, workload, quick):
    lib, device = backend_module(backend)
    rows = {"per-op": per_op, "item": item, "chain": chain, "mlp": mlp, "gpt": gpt, "generate": generate, "cnn": cnn,
            "resnet": resnet}[workload](
        lib, backend == "torch.compile", quick)
    print(json.dumps({"rows": rows, "device": device}))


def run(backend, workload, quick):
    env = dict(os.environ, GT_JIT_SYNC="1")
    cmd = [sys.executable, __file__, "--child", backend, workload] + (["--quick"] if quick else [])
    try:
        out = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=600)
    except subprocess.TimeoutExpired:
        return None, "over 600 s"
    if out.returncode:
        lines = out.stderr.strip().splitlines()
        return None, lines[-1] if lines else f"exit {out.returncode}"
    return json.loads(out.stdout.strip().splitlines()[-1]), ""


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--child", nargs=2)
    p.add_argument("--quick", action="store_true", help="fewer timed iterations (a smoke test)")
    p.add_argument("--only", default="gt,torch,torch.compile")
    p.add_argument("--workloads", default=",".join(WORKLOADS), help="which of " + ", ".join(WORKLOADS))
    args = p.parse_args()
    if args.child:
        return child(*args.child, args.quick)
    backends = args.only.split(",")
    workloads = args.workloads.split(",")
    if set(workloads) - set(WORKLOADS):
        p.error(f"unknown workloads {sorted(set(workloads) - set(WORKLOADS))} (one of {', '.join(WORKLOADS)})")
    results, devices, notes = {}, {}, []
    for workload in workloads:
        for backend in backends:
            if backend == "torch.compile" and workload in ("per-op", "item"):
                continue
            r, why = run(backend, workload, args.quick)
            if r:
                devices[backend] = r["device"]
                results.update({(row, backend): value for row, value in r["rows"].items()})
            else:
                results.update({(row, backend): None for row in ROWS[workload]})
                notes.append(f"{backend}, {workload}: {why}")
    print("devices: " + ", ".join(f"{b} on {d}" for b, d in devices.items()))
    print("| workload | unit | " + " | ".join(backends) + " | GT / eager |")
    print("|---|---|" + "---|" * len(backends) + "---|")
    for workload in workloads:
        for row in ROWS[workload]:
            unit, scale = UNITS[row]
            cells = []
            for backend in backends:
                v = results.get((row, backend), "n/a")
                cells.append(v if v == "n/a" else "failed" if v is None else f"{v * scale:.3g}")
            g, t = results.get((row, "gt")), results.get((row, "torch"))
            ratio = f"{g / t:.2f}x" if g and t and "compiles" not in row else ""
            print(f"| {row} | {unit} | " + " | ".join(cells) + f" | {ratio} |")
    for n in notes:
        print("failed: " + n)
    sys.exit(1 if notes else 0)


if __name__ == "__main__":
    main()
