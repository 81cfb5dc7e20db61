"""Functions gt.multiprocessing.spawn runs in child processes (test_data.py): importable by name,
as the 'spawn' start method needs."""
import gt


def write_sum(i, path):
    """Each child is a GT client of its own: it computes with its own session and writes the result."""
    with open(f"{path}.{i}", "w") as f:
        f.write(str((gt.tensor([1.0, 2.0, 3.0]) * (i + 1)).sum().item()))


def fail_on_one(i):
    if i == 1:
        raise ValueError("child 1 failed on purpose")
