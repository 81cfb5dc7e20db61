"""torch._inductor: `config`, whose switches scripts set for torch.compile
(`torch._inductor.config.coordinate_descent_tuning = True`): any attribute is accepted and read
back; GT's compiler does not read them (docs/jit.md says what tunes it)."""
import types

config = types.SimpleNamespace(coordinate_descent_tuning=False, triton=types.SimpleNamespace(unique_kernel_names=False,
                                                                                            cudagraphs=False),
                               fx_graph_cache=True, freezing=False, max_autotune=False)
