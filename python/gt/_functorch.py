"""torch._functorch: `config`, whose switches scripts set for torch.compile's AOT autograd
(`torch._functorch.config.donated_buffer = False`): any attribute is accepted and read back;
GT does not read them."""
import sys
import types

__path__ = []  # (a package, so that `import torch.X.config` finds its config below)
config = types.ModuleType("gt._functorch.config", __doc__)
config.__dict__.update(donated_buffer=True, activation_memory_budget=1.0)
sys.modules[config.__name__] = config
