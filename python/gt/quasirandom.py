"""torch.quasirandom: SobolEngine, low-discrepancy points in [0, 1)^d (botorch's quasi-Monte
Carlo samplers draw from it).

The points are SciPy's Sobol sequence (scipy.stats.qmc.Sobol: Joe and Kuo's direction numbers,
2008, as PyTorch's): unscrambled, the same points as PyTorch's SobolEngine; scrambled (Owen's
scrambling, seeded by `seed`), a different randomization from PyTorch's for one seed.
"""
import numpy as np

from . import _tensor as _T
from . import dtypes as _dt


class SobolEngine:
    """torch.quasirandom.SobolEngine(dimension, scramble=False, seed=None): draw(n) gives the next
    n points (n, dimension) in [0, 1) (float32 unless dtype says; the default float dtype of
    PyTorch's is float32 too), draw_base2(m) the next 2^m, fast_forward(n) skips n, reset()
    starts again. dimension from 1 to 21201 (ValueError otherwise)."""
    MAXDIM = 21201

    def __init__(self, dimension, scramble=False, seed=None):
        if not 1 <= dimension <= self.MAXDIM:
            raise ValueError(f"Supported range of dimensionality for SobolEngine is [1, {self.MAXDIM}]")
        from scipy.stats import qmc
        self.dimension, self.scramble, self.seed = dimension, scramble, seed
        self._engine = qmc.Sobol(dimension, scramble=scramble, seed=seed)
        self.num_generated = 0

    def draw(self, n=1, out=None, dtype=None):
        """The next n points, a tensor (n, dimension); written into `out` when given."""
        import warnings
        with warnings.catch_warnings():  # (SciPy warns when n is not a power of 2; PyTorch does not)
            warnings.simplefilter("ignore", UserWarning)
            points = self._engine.random(n)
        self.num_generated += n
        d = _dt.resolve(dtype) if dtype is not None else _dt.default_float()
        result = _T.tensor(np.ascontiguousarray(points).astype(_dt.numpy_dtype(d)))
        if out is not None:
            out.resize_(result.shape).copy_(result)
            return out
        return result

    def draw_base2(self, m, out=None, dtype=None):
        """The next 2^m points; ValueError when the total drawn would not stay a power of 2."""
        n = 2 ** m
        total = self.num_generated + n
        if total & (total - 1):
            raise ValueError(f"The balance properties of Sobol' points require n to be a power of 2. "
                             f"{self.num_generated} points have been previously generated, then: n={self.num_generated}"
                             f"+2**{m}={total}. If you still want to do this, please use 'SobolEngine.draw()' instead.")
        return self.draw(n, out, dtype)

    def reset(self):
        self._engine.reset()
        self.num_generated = 0
        return self

    def fast_forward(self, n):
        self._engine.fast_forward(n)
        self.num_generated += n
        return self

    def __repr__(self):
        fields = [f"dimension={self.dimension}"]
        if self.scramble:
            fields.append("scramble=True")
        if self.seed is not None:
            fields.append(f"seed={self.seed}")
        return f"SobolEngine({', '.join(fields)})"
