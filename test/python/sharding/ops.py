"""Many ops on tensors split along one axis; prints a JSON report of every result.

    python ops.py WORKERS [SIGNAL]

Run by test_distributed.py with 3 and 4 workers (13 rows, 7 columns: uneven splits) under
each signal of split_axes.yaml, against the same script on one worker without a config. An op
that raises is reported as its error, so one failure does not hide the others.
"""
import json
import sys

import numpy as np

import gt
import gt.nn.functional as F


class _nothing:
    def __enter__(self):
        return self

    def __exit__(self, *args):
        return False


def main():
    workers = int(sys.argv[1])
    signal = sys.argv[2] if len(sys.argv) > 2 else None
    gt.gpu_workers(workers)
    if signal:
        gt.load_config(sys.argv[3])
    ctx = (lambda: gt.signal.context(signal)) if signal else _nothing
    rng = np.random.default_rng(0)
    A = rng.standard_normal((13, 7)).astype(np.float32)
    B = rng.standard_normal((7, 5)).astype(np.float32)
    S = rng.standard_normal((7, 7)).astype(np.float32)
    C = rng.standard_normal((13, 7, 3)).astype(np.float32)
    # Made outside the signal (1-D: a column split would not fit them).
    index = gt.tensor(np.array([3, 0, 12, 5, 5]))
    labels = gt.tensor(np.arange(13) % 7)
    w1 = gt.tensor(rng.standard_normal((4, 7, 2)).astype(np.float32))  # conv1d: c as (N=13, C=7, L=3)
    with ctx():
        a = gt.tensor(A, requires_grad=True)
        b = gt.tensor(B, requires_grad=True)
        c = gt.tensor(C)
        s = gt.tensor(S)
    out = {}

    def record(name, f):
        try:
            with ctx():
                v = f()
            out[name] = np.asarray(v.numpy() if isinstance(v, gt.Tensor) else v).tolist()
        except Exception as e:  # noqa: BLE001 - the report names it
            out[name] = f"{type(e).__name__}: {e}"

    def grads(loss_of):
        def run():
            a.grad = b.grad = None
            loss_of().backward()
            return gt.cat([a.grad.reshape(-1), b.grad.reshape(-1)], 0)
        return run

    record("sum0", lambda: a.sum(0))
    record("sum1", lambda: a.sum(1))
    record("sum", lambda: a.sum())
    record("mean1_keepdim", lambda: a.mean(1, keepdim=True))
    record("amax0", lambda: a.amax(0))
    record("amax1", lambda: a.amax(1))
    record("argmax0", lambda: a.argmax(0))
    record("argmax1", lambda: a.argmax(1))
    record("var0", lambda: a.var(0))
    record("std1", lambda: a.std(1))
    record("sum12", lambda: c.sum((1, 2)))
    record("softmax0", lambda: F.softmax(a, dim=0))
    record("softmax1", lambda: F.softmax(a, dim=-1))
    record("log_softmax1", lambda: F.log_softmax(a, dim=1))
    record("layer_norm", lambda: F.layer_norm(a, (7,)))
    record("transpose", lambda: a.T + 1)
    record("reshape", lambda: a.reshape(7, 13) * 2)
    record("flatten", lambda: a.reshape(-1) * 2)
    record("permute", lambda: c.permute(2, 0, 1) * 1)
    record("slice_rows", lambda: a[2:9] * 1)
    record("slice_step", lambda: a[::3] * 1)
    record("slice_cols", lambda: a[:, 1:4] * 1)
    record("cat0", lambda: gt.cat([a, a], 0) * 1)
    record("cat1", lambda: gt.cat([a, a], 1) * 1)
    record("tril", lambda: gt.tril(c, -1) * 1)  # split rows stay split; other axes are gathered
    record("tril_2d", lambda: a.tril(1) * 1)
    record("triu", lambda: gt.triu(c, 1) * 1)
    record("triu_2d", lambda: a.triu(-2) * 1)
    record("flip0", lambda: a.flip(0) * 1)  # along a split axis: gathered first
    record("flip1", lambda: gt.flip(c, (1, 2)) * 1)
    record("cumsum0", lambda: a.cumsum(0))  # along a split axis: gathered first
    record("cumsum1", lambda: gt.cumsum(c, 1))
    record("argsort0", lambda: a.argsort(0))  # along a split axis: gathered first
    record("argsort1", lambda: gt.argsort(c, 1, descending=True))
    record("topk", lambda: gt.topk(c, 2, -1).values * 1)
    record("prod0", lambda: (a * 0.1 + 1).prod(0))  # over a split axis: gathered first
    record("prod1", lambda: (c * 0.1 + 1).prod((1, 2), keepdim=True))
    record("conv1d", lambda: F.conv1d(c, w1, padding=1, stride=2))  # split rows (the batch) stay split
    def conv1d_input_grad():  # convolution_backward_input (CPU workers) or col2im
        x = c.detach().requires_grad_()
        return gt.autograd.grad((F.conv1d(x, w1, padding=1) ** 2).sum(), [x])[0]
    record("conv1d_input_grad", conv1d_input_grad)
    def conv1d_weight_grad():  # over a split batch: each worker's partial sum, then an all_reduce
        w = w1.detach().requires_grad_()
        return gt.autograd.grad((F.conv1d(c, w, padding=1, stride=2) ** 2).sum(), [w])[0]
    record("conv1d_weight_grad", conv1d_weight_grad)
    record("matmul", lambda: a @ b)
    record("gram", lambda: a.T @ a)
    record("outer", lambda: a @ a.T)
    # Under `rows` a.T @ a sums over the split rows (partial) and s is split by rows: the partial
    # sums meet s as a reduce_scatter.
    record("gram_plus_split", lambda: (a.T @ a) + s)
    record("bmm", lambda: c.permute(0, 2, 1) @ c)
    record("index", lambda: a[index] * 1)
    record("where", lambda: gt.where(a > 0, a, a * 0.1))
    record("cross_entropy", lambda: F.cross_entropy(a, labels))
    record("item", lambda: a.sum().item())
    record("grad_matmul", grads(lambda: (a @ b).relu().sum()))
    record("grad_softmax0", grads(lambda: (F.softmax(a, dim=0) * gt.tensor(A)).sum() + b.sum()))
    record("grad_layer_norm", grads(lambda: (F.layer_norm(a, (7,)) ** 2).mean() + (b * b).sum()))
    stats = gt.debug.stats()
    out["collective_ops"] = [w["collective_ops"] for w in stats["by_worker"].values()]
    print(json.dumps(out))


if __name__ == "__main__":
    main()
