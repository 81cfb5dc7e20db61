"""torch._inductor: `config`, whose switches scripts set for torch.compile
(`torch._inductor.config.coordinate_descent_tuning = True`): any attribute is accepted and read
back; GT's compiler does not read them (docs/jit.md says what tunes it)."""
import sys
import types

__path__ = []  # (a package, so that `import torch.X.config` finds its config below)
# A module of its own, so that `import torch._inductor.config` works too.
config = types.ModuleType("gt._inductor.config", "torch._inductor.config: any attribute is accepted and read back.")
config.__dict__.update(coordinate_descent_tuning=False, triton=types.SimpleNamespace(unique_kernel_names=False,
                                                                                     cudagraphs=False),
                       fx_graph_cache=True, freezing=False, max_autotune=False)
sys.modules[config.__name__] = config
