"""torch.utils.flop_counter: FlopCounterMode exists for libraries that import it (Lightning's
model summary); GT does not count FLOPs, so a FlopCounterMode counts nothing and its totals are 0,
with a warning when one is entered."""
import warnings


class FlopCounterMode:
    """A context manager that counts nothing (see the module's docstring)."""

    def __init__(self, mods=None, depth=2, display=True, custom_mapping=None):
        self.depth, self.display = depth, display
        self.flop_counts = {}

    def __enter__(self):
        warnings.warn("torch.utils.flop_counter.FlopCounterMode: GT does not count FLOPs (totals stay 0)",
                      UserWarning, stacklevel=2)
        return self

    def __exit__(self, *exc):
        return False

    def get_total_flops(self):
        return 0

    def get_flop_counts(self):
        return {}

    def get_table(self, depth=None):
        return ""
