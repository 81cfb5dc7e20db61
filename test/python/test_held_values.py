"""The client keeps what it fetched of a small tensor (Tensor._host): a tensor's values never
change (in-place ops rebind the Python object), so reading it again or reading its elements
(`x[i].item()`, as a Dataset's __getitem__ does per sample) waits once, not once per read; and
an in-place op, which rebinds, is never answered from the old values."""
import numpy as np

import gt


def reads():
    return gt.debug.stats()["direct_reads"]


def test_elements_of_a_small_tensor_are_read_with_one_fetch():
    x = gt.randperm(200)
    before = reads()
    got = [x[i].item() for i in range(200)]
    assert reads() - before == 1  # the whole of x once, then every element from it
    assert got == x.numpy().tolist() and sorted(got) == list(range(200))
    m = gt.arange(12.0).reshape(3, 4) * 2
    assert m[1].tolist() == [8.0, 10.0, 12.0, 14.0] and m[-1, -1].item() == 22.0 and int(m[2][3]) == 22
    assert float(m[0, 1]) == 2.0 and m[2].numpy().dtype == np.float32


def test_in_place_ops_are_never_answered_from_old_values():
    x = gt.arange(6).reshape(2, 3)
    assert x.numpy()[1, 2] == 5 and x[1, 2].item() == 5
    x[1, 2] = 99  # rebinds x
    assert x[1, 2].item() == 99 and x.numpy().tolist() == [[0, 1, 2], [3, 4, 99]]
    y = gt.tensor([1.5, 2.5])
    first = y[0]
    assert first.item() == 1.5
    y += 1
    assert y[0].item() == 2.5 and y.numpy().tolist() == [2.5, 3.5]
    assert first.item() == 1.5  # the element taken before the update keeps its value
    z = gt.ones(3)
    z.numpy()
    z.add_(gt.ones(3))
    assert z.tolist() == [2.0, 2.0, 2.0]
    held = z.numpy()
    held[0] = -1  # the caller's copy, not the held one
    assert z.numpy()[0] == 2.0


def test_large_tensors_are_not_held():
    big = gt.zeros(300_000)  # 1.2 MB: over the 1 MiB the client keeps
    big.numpy()
    before = reads()
    big[5].item()
    big[6].item()
    assert reads() - before == 2


def test_an_element_does_not_keep_its_base_alive():
    import gc
    import weakref
    x = gt.arange(10) * 3
    y = x[4]
    base = weakref.ref(x)
    del x
    gc.collect()
    assert base() is None  # y holds a weak reference only: x's values are freed on the workers
    assert y.item() == 12  # fetched on its own
