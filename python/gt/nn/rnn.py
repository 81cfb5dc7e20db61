"""Recurrent layers with torch.nn's names, parameters and gate order: RNN, LSTM (Hochreiter &
Schmidhuber 1997, with a forget gate: Gers et al. 2000), GRU (Cho et al. 2014) and their cells.

Per layer and direction: weight_ih_l{k} (G*H, input), weight_hh_l{k} (G*H, H), bias_ih_l{k},
bias_hh_l{k} (G*H,), suffixed `_reverse` for the backward direction; G = 1 (RNN), 4 (LSTM:
input, forget, cell, output) or 3 (GRU: reset, update, new), every one ~ U(-1/sqrt(H),
1/sqrt(H)) as PyTorch. A layer's input projections for the whole sequence are one matrix
product; the recurrence then runs one time step at a time (a few ops per step). An LSTM layer
(without projections or packed input) is one autograd Function, _LSTMLayer, whose backward is
written out rather than recorded op by op. An LSTM with
`proj_size` P > 0 (Sak et al. 2014, "LSTMP") also has weight_hr_l{k} (P, H): its hidden state is
h_t = W_hr (o * tanh(c_t)), of size P, which the next step and layer read (weight_hh (4H, P)).

Shapes: input (L, N, H_in), (N, L, H_in) with batch_first, unbatched (L, H_in), or a
PackedSequence (gt.nn.utils.rnn: the output is then one too, and each sequence's h_n is its own
last step's); output
(L, N, D*H_out) with D = 2 if bidirectional; h_n (D*num_layers, N, H_out); the LSTM's c_n
(D*num_layers, N, H). H_out is proj_size if it is > 0, else H.
"""
import math
import warnings

import numpy as np

from .. import _functions as T
from .. import autograd as _autograd
from .. import overrides as _overrides
from .._composites import select as _select
from . import functional as F
from . import init
from .modules import Module, Parameter
from .utils import rnn as _packing

_GATES = {"RNN_TANH": 1, "RNN_RELU": 1, "LSTM": 4, "GRU": 3}


def _lstm_step(gi, h, c, w_hh, b_hh, w_hr=None):
    gates = gi + F.linear(h, w_hh, b_hh)
    i, f, g, o = T.chunk(gates, 4, -1)
    c = T.sigmoid(f) * c + T.sigmoid(i) * T.tanh(g)
    h = T.sigmoid(o) * T.tanh(c)
    return (h if w_hr is None else F.linear(h, w_hr)), c


class _LSTMLayer(_autograd.Function):
    """One LSTM layer over a whole sequence, with its backward written out (the LSTM's
    equations, differentiated by hand) instead of recorded op by op: about 15 ops per step
    forward and 20 backward, against ~55 recorded, and the recurrent weight's gradient as one
    matrix product over all steps instead of one per step.

    forward(gi (L, N, 4H): the input projections with b_ih, h0 (N, H), c0 (N, H), w_hh (4H, H),
    b_hh (4H,) or None) -> (L + 1, N, H): h_1 ... h_L, then c_L (one tensor, so backward runs
    once). Gates in torch's order i, f, g, o: c_t = f c_(t-1) + i g, h_t = o tanh(c_t).
    For a second derivative (create_graph: a gradient penalty) its backward differentiates the
    recurrence recomputed op by op (_lstm_recurrence), so that the gradient is differentiable."""

    @staticmethod
    def forward(ctx, gi, h0, c0, w_hh, b_hh):
        ctx.inputs = (gi, h0, c0, w_hh, b_hh)
        L, _, G = gi.shape
        H = G // 4
        if b_hh is not None:
            gi = gi + b_hh
        w_t = T.transpose(w_hh, 0, 1)
        is_g = T.tensor(np.arange(G) // H == 2)  # the cell-input gate's columns (tanh, not sigmoid)
        h, c, hs, saved = h0, c0, [], []
        for t in range(L):
            gates = _select(gi, 0, t) + T.matmul(h, w_t)
            act = T.where(is_g, T.tanh(gates), T.sigmoid(gates))
            i, f, g, o = (T.narrow(act, 1, k * H, H) for k in range(4))
            c_prev = c
            c = f * c + i * g
            tc = T.tanh(c)
            h = o * tc
            hs.append(h)
            saved.append((act, i, f, g, o, c_prev, tc))
        ctx.lstm = (saved, hs, h0, w_hh, is_g)
        return T.cat([T.stack(hs, 0), T.unsqueeze(c, 0)], 0)

    @staticmethod
    def backward(ctx, grad):
        if _autograd.is_grad_enabled():  # create_graph
            wanted = [t for t, need in zip(ctx.inputs, ctx.needs_input_grad) if need and t is not None]
            with _autograd.enable_grad():
                again = _lstm_recurrence(*ctx.inputs)
            grads = iter(_autograd.grad(again, wanted, grad, create_graph=True, allow_unused=True))
            return tuple(next(grads) if need and t is not None else None
                         for t, need in zip(ctx.inputs, ctx.needs_input_grad))
        saved, hs, h0, w_hh, is_g = ctx.lstm
        L = len(saved)
        dc = _select(grad, 0, L)
        dh_next, dgates = None, [None] * L
        for t in range(L - 1, -1, -1):
            act, i, f, g, o, c_prev, tc = saved[t]
            dh = _select(grad, 0, t)
            if dh_next is not None:
                dh = dh + dh_next
            dc = dc + dh * o * (1.0 - tc * tc)
            dact = T.cat([dc * g, dc * c_prev, dc * i, dh * tc], 1)
            d = dact * T.where(is_g, 1.0 - act * act, act * (1.0 - act))
            dc = dc * f
            dh_next = T.matmul(d, w_hh)
            dgates[t] = d
        dg = T.stack(dgates, 0)  # (L, N, 4H): the gradient of gi (and of b_hh, summed)
        L, N, G = dg.shape
        h_prev = T.stack([h0] + hs[:-1], 0)
        dw_hh = T.matmul(T.transpose(T.reshape(dg, L * N, G), 0, 1), T.reshape(h_prev, L * N, -1))
        db_hh = T.sum(dg, (0, 1)) if ctx.needs_input_grad[4] else None
        return dg, dh_next, dc, dw_hh, db_hh


def _lstm_recurrence(gi, h0, c0, w_hh, b_hh):
    """_LSTMLayer's result, h_1 ... h_L then c_L (L + 1, N, H), computed op by op."""
    h, c, hs = h0, c0, []
    for t in range(gi.shape[0]):
        h, c = _lstm_step(_select(gi, 0, t), h, c, w_hh, b_hh)
        hs.append(h)
    return T.cat([T.stack(hs, 0), T.unsqueeze(c, 0)], 0)


def _lstm_layer(gi, h0, c0, w_hh, b_hh, reverse):
    """(output (L, N, H), h_L, c_L) of one LSTM layer and direction (_LSTMLayer)."""
    if reverse:
        gi = T.flip(gi, [0])
    y = _LSTMLayer.apply(gi, h0, c0, w_hh, b_hh)
    L = gi.shape[0]
    out = T.narrow(y, 0, 0, L)
    return (T.flip(out, [0]) if reverse else out), _select(y, 0, L - 1), _select(y, 0, L)


def _gru_step(gi, h, w_hh, b_hh):
    gh = F.linear(h, w_hh, b_hh)
    ir, iz, inn = T.chunk(gi, 3, -1)
    hr, hz, hn = T.chunk(gh, 3, -1)
    r, z = T.sigmoid(ir + hr), T.sigmoid(iz + hz)
    n = T.tanh(inn + r * hn)
    return (1.0 - z) * n + z * h


def _rnn_step(gi, h, w_hh, b_hh, relu):
    pre = gi + F.linear(h, w_hh, b_hh)
    return T.relu(pre) if relu else T.tanh(pre)


class _RNNBase(Module):
    def __init__(self, mode, input_size, hidden_size, num_layers=1, bias=True, batch_first=False, dropout=0.0,
                 bidirectional=False, proj_size=0, device=None, dtype=None):
        super().__init__()
        if proj_size < 0:
            raise ValueError("proj_size should be a positive integer or zero to disable projections")
        if proj_size >= hidden_size and proj_size:
            raise ValueError("proj_size has to be smaller than hidden_size")
        if proj_size and mode != "LSTM":
            raise ValueError("proj_size argument is only supported for LSTM, not RNN or GRU")
        if not 0 <= dropout <= 1:
            raise ValueError(f"dropout should be a number in range [0, 1], got {dropout}")
        if dropout > 0 and num_layers == 1:
            warnings.warn("dropout option adds dropout after all but last recurrent layer, so non-zero dropout expects "
                          f"num_layers greater than 1, but got dropout={dropout} and num_layers={num_layers}",
                          stacklevel=3)
        if hidden_size <= 0 or num_layers <= 0:
            raise ValueError("hidden_size and num_layers must be positive")
        self.mode, self.input_size, self.hidden_size, self.num_layers = mode, input_size, hidden_size, num_layers
        self.bias, self.batch_first, self.dropout, self.bidirectional = bias, batch_first, float(dropout), bidirectional
        self.proj_size = proj_size
        out = proj_size or hidden_size  # the hidden state's size
        gates = _GATES[mode] * hidden_size
        directions = 2 if bidirectional else 1
        self._flat_names = []
        for layer in range(num_layers):
            for d in range(directions):
                suffix = f"_l{layer}" + ("_reverse" if d else "")
                width = input_size if layer == 0 else out * directions
                names = [f"weight_ih{suffix}", f"weight_hh{suffix}"]
                setattr(self, names[0], Parameter(T.zeros(gates, width, dtype=dtype)))
                setattr(self, names[1], Parameter(T.zeros(gates, out, dtype=dtype)))
                if bias:
                    names += [f"bias_ih{suffix}", f"bias_hh{suffix}"]
                    setattr(self, names[2], Parameter(T.zeros(gates, dtype=dtype)))
                    setattr(self, names[3], Parameter(T.zeros(gates, dtype=dtype)))
                if proj_size:
                    names.append(f"weight_hr{suffix}")
                    setattr(self, names[-1], Parameter(T.zeros(proj_size, hidden_size, dtype=dtype)))
                self._flat_names.append(names)
        self.reset_parameters()

    def __setstate__(self, state):
        """A pickled RNN, GT's or PyTorch's: PyTorch's lists its parameters' names by layer and
        direction as `_all_weights` (GT's `_flat_names`)."""
        self.__dict__.update(state)
        if "_flat_names" not in state:
            names = state.get("_all_weights")
            if names is None:  # (neither: by PyTorch's naming, from the parameters themselves)
                params = list(self._parameters)
                names = [[n for n in params if n.split("_", 2)[2] == f"l{layer}{suffix}"]
                         for layer in range(self.num_layers) for suffix in ([""] + (["_reverse"] if self.bidirectional else []))]
            self._flat_names = [list(n) for n in names]

    @property
    def _all_weights(self):
        """The parameters' names by layer and direction, as PyTorch's RNNBase._all_weights."""
        return [list(names) for names in self._flat_names]

    @property
    def _flat_weights_names(self):
        """Every parameter's name in layer and direction order (PyTorch's; scripts initialize
        through it: for name in rnn._flat_weights_names: init.xavier_uniform_(...))."""
        return [n for names in self._flat_names for n in names]

    @property
    def _flat_weights(self):
        """The weights forward uses, in _flat_weights_names' order: the parameters, or the
        tensors a script assigned here (PyTorch's forward reads this list: the `higher` library
        and WeightDrop-style code put non-leaf weights in it)."""
        assigned = self.__dict__.get("_assigned_flat_weights")
        return list(assigned) if assigned is not None else [getattr(self, n) for n in self._flat_weights_names]

    @_flat_weights.setter
    def _flat_weights(self, weights):
        weights = list(weights)
        if len(weights) != len(self._flat_weights_names):
            raise ValueError(f"_flat_weights: expected {len(self._flat_weights_names)} tensors, got {len(weights)}")
        self.__dict__["_assigned_flat_weights"] = weights

    @property
    def all_weights(self):
        """The parameters by layer and direction: [[weight_ih, weight_hh, bias_ih, bias_hh], ...]."""
        return [[getattr(self, n) for n in names] for names in self._flat_names]

    def reset_parameters(self):
        bound = 1.0 / math.sqrt(self.hidden_size)
        for p in self.parameters():
            init.uniform_(p, -bound, bound)

    def _weights(self, layer, direction):
        names = self._flat_names[layer * (2 if self.bidirectional else 1) + direction]
        assigned = self.__dict__.get("_assigned_flat_weights")
        if assigned is None:
            get = lambda k: getattr(self, names[k])  # noqa: E731
        else:  # (the weights assigned to _flat_weights, by name)
            by_name = dict(zip(self._flat_weights_names, assigned))
            get = lambda k: by_name[names[k]]  # noqa: E731
        w_ih, w_hh = get(0), get(1)
        b_ih, b_hh = (get(2), get(3)) if self.bias else (None, None)
        w_hr = get(len(names) - 1) if self.proj_size else None
        return w_ih, w_hh, b_ih, b_hh, w_hr

    @_overrides.keeps_subclass
    def forward(self, input, hx=None):
        lstm = self.mode == "LSTM"
        packed = input if isinstance(input, _packing.PackedSequence) else None
        keep = None  # (L, N, 1) bool: which steps of a packed batch's sequences are real
        if packed is not None:  # (its batch sizes and sort are read once: two small fetches)
            order = packed._order()
            input, lengths = _packing._unpack(packed, packed._sizes(), order)
            keep = T.tensor(np.arange(input.shape[0])[:, None, None] < np.asarray(lengths)[None, :, None])
        unbatched = input.ndim == 2
        if input.ndim not in (2, 3):
            raise ValueError(f"{type(self).__name__}: expected input of 2 or 3 dims, got {input.ndim}")
        x = T.unsqueeze(input, 1) if unbatched else (
            T.transpose(input, 0, 1) if self.batch_first and packed is None else input)
        if x.shape[-1] != self.input_size:
            raise RuntimeError(f"{type(self).__name__}: input.size(-1) must be equal to input_size. Expected "
                             f"{self.input_size}, got {x.shape[-1]}")
        L, N = x.shape[:2]
        D = 2 if self.bidirectional else 1
        shape = (D * self.num_layers, N, self.proj_size or self.hidden_size)
        cell_shape = (D * self.num_layers, N, self.hidden_size)
        if hx is None:
            h0 = T.zeros(shape, dtype=x.dtype)
            c0 = T.zeros(cell_shape, dtype=x.dtype) if lstm else None
        else:
            h0, c0 = hx if lstm else (hx, None)
            if unbatched:
                h0 = T.unsqueeze(h0, 1)
                c0 = T.unsqueeze(c0, 1) if c0 is not None else None
            if tuple(h0.shape) != shape:
                raise RuntimeError(f"Expected hidden size {list(shape)}, got {list(h0.shape)}")
            if c0 is not None and tuple(c0.shape) != cell_shape:
                raise RuntimeError(f"Expected hidden[1] size {list(cell_shape)}, got {list(c0.shape)}")
        h_n, c_n = [], []
        for layer in range(self.num_layers):
            outputs = []
            for d in range(D):
                w_ih, w_hh, b_ih, b_hh, w_hr = self._weights(layer, d)
                gi = F.linear(x, w_ih, b_ih)  # (L, N, G*H): the input's part of every step at once
                h = h0[layer * D + d]
                c = c0[layer * D + d] if lstm else None
                if lstm and w_hr is None and keep is None and L > 0:  # the whole recurrence as one Function
                    out, h, c = _lstm_layer(gi, h, c, w_hh, b_hh, reverse=bool(d))
                    outputs.append(out)
                    h_n.append(h)
                    c_n.append(c)
                    continue
                steps = range(L - 1, -1, -1) if d else range(L)
                out = [None] * L
                for t in steps:
                    if lstm:
                        h_t, c_t = _lstm_step(gi[t], h, c, w_hh, b_hh, w_hr)
                    elif self.mode == "GRU":
                        h_t = _gru_step(gi[t], h, w_hh, b_hh)
                    else:
                        h_t = _rnn_step(gi[t], h, w_hh, b_hh, self.mode == "RNN_RELU")
                    if keep is not None:  # a sequence past its length keeps its state
                        h_t = T.where(keep[t], h_t, h)
                        c_t = T.where(keep[t], c_t, c) if lstm else None
                    h, c = h_t, (c_t if lstm else None)
                    out[t] = h
                outputs.append(T.stack(out, 0))
                h_n.append(h)
                if lstm:
                    c_n.append(c)
            x = outputs[0] if D == 1 else T.cat(outputs, -1)
            if self.dropout and self.training and layer < self.num_layers - 1:
                x = F.dropout(x, self.dropout, True)
        if packed is not None:
            data, batch_sizes = _packing._pack(x, lengths, order)
            output = _packing.PackedSequence(data, batch_sizes, packed.sorted_indices, packed.unsorted_indices)
        else:
            output = T.squeeze(x, 1) if unbatched else (T.transpose(x, 0, 1) if self.batch_first else x)
        h_n = T.stack(h_n, 0)
        if unbatched:
            h_n = T.squeeze(h_n, 1)
        if lstm:
            c_n = T.stack(c_n, 0)
            return output, (h_n, T.squeeze(c_n, 1) if unbatched else c_n)
        return output, h_n

    def extra_repr(self):  # (PyTorch's order; the nonlinearity is not shown, as there)
        s = f"{self.input_size}, {self.hidden_size}"
        if self.proj_size:
            s += f", proj_size={self.proj_size}"
        if self.num_layers != 1:
            s += f", num_layers={self.num_layers}"
        if self.bias is not True:
            s += f", bias={self.bias}"
        if self.batch_first:
            s += ", batch_first=True"
        if self.dropout:
            s += f", dropout={self.dropout}"
        if self.bidirectional:
            s += ", bidirectional=True"
        return s

    def flatten_parameters(self):
        """Nothing to do: cuDNN's packed weight buffer, which torch's version rebuilds, has no
        counterpart in GT (each weight is its own tensor on the workers)."""


class RNN(_RNNBase):
    """h_t = tanh(W_ih x_t + b_ih + W_hh h_(t-1) + b_hh) (nonlinearity='relu': relu)."""

    def __init__(self, input_size, hidden_size, num_layers=1, nonlinearity="tanh", bias=True, batch_first=False,
                 dropout=0.0, bidirectional=False, device=None, dtype=None):
        if nonlinearity not in ("tanh", "relu"):
            raise ValueError(f"Unknown nonlinearity '{nonlinearity}'. Select from 'tanh' or 'relu'.")
        super().__init__("RNN_TANH" if nonlinearity == "tanh" else "RNN_RELU", input_size, hidden_size, num_layers,
                         bias, batch_first, dropout, bidirectional, device=device, dtype=dtype)
        self.nonlinearity = nonlinearity


class LSTM(_RNNBase):
    """i, f, g, o = sigmoid, sigmoid, tanh, sigmoid of W_ih x_t + b_ih + W_hh h + b_hh (in that
    order); c_t = f c + i g; h_t = o tanh(c_t). forward(input, (h0, c0)) -> (output, (h_n, c_n))."""

    def __init__(self, input_size, hidden_size, num_layers=1, bias=True, batch_first=False, dropout=0.0,
                 bidirectional=False, proj_size=0, device=None, dtype=None):
        super().__init__("LSTM", input_size, hidden_size, num_layers, bias, batch_first, dropout, bidirectional,
                         proj_size, device, dtype)


class GRU(_RNNBase):
    """r, z = sigmoid(W_i x + b_i + W_h h + b_h) (reset, update); n = tanh(W_in x + b_in +
    r (W_hn h + b_hn)); h_t = (1 - z) n + z h."""

    def __init__(self, input_size, hidden_size, num_layers=1, bias=True, batch_first=False, dropout=0.0,
                 bidirectional=False, device=None, dtype=None):
        super().__init__("GRU", input_size, hidden_size, num_layers, bias, batch_first, dropout, bidirectional,
                         device=device, dtype=dtype)


class _CellBase(Module):
    def __init__(self, input_size, hidden_size, bias, gates, dtype=None):
        super().__init__()
        self.input_size, self.hidden_size, self.bias = input_size, hidden_size, bias
        self.weight_ih = Parameter(T.zeros(gates * hidden_size, input_size, dtype=dtype))
        self.weight_hh = Parameter(T.zeros(gates * hidden_size, hidden_size, dtype=dtype))
        self.bias_ih = Parameter(T.zeros(gates * hidden_size, dtype=dtype)) if bias else None
        self.bias_hh = Parameter(T.zeros(gates * hidden_size, dtype=dtype)) if bias else None
        self.reset_parameters()

    def reset_parameters(self):
        """Every weight and bias ~ U(-1/sqrt(hidden_size), 1/sqrt(hidden_size)), as PyTorch's."""
        bound = 1.0 / math.sqrt(self.hidden_size)
        for p in self.parameters():
            init.uniform_(p, -bound, bound)

    def _zeros(self, x):
        return T.zeros(x.shape[:-1] + (self.hidden_size,), dtype=x.dtype)

    def extra_repr(self):
        s = f"{self.input_size}, {self.hidden_size}"
        if self.bias is not True:
            s += f", bias={self.bias}"
        if getattr(self, "nonlinearity", "tanh") != "tanh":
            s += f", nonlinearity={self.nonlinearity}"
        return s


class RNNCell(_CellBase):
    """One step of RNN: (N, input) and h (N, H) -> h'."""

    def __init__(self, input_size, hidden_size, bias=True, nonlinearity="tanh", device=None, dtype=None):
        super().__init__(input_size, hidden_size, bias, 1, dtype)
        self.nonlinearity = nonlinearity

    def forward(self, input, hx=None):
        h = self._zeros(input) if hx is None else hx
        return _rnn_step(F.linear(input, self.weight_ih, self.bias_ih), h, self.weight_hh, self.bias_hh,
                         self.nonlinearity == "relu")


class LSTMCell(_CellBase):
    """One step of LSTM: (N, input) and (h, c) -> (h', c')."""

    def __init__(self, input_size, hidden_size, bias=True, device=None, dtype=None):
        super().__init__(input_size, hidden_size, bias, 4, dtype)

    def forward(self, input, hx=None):
        h, c = (self._zeros(input), self._zeros(input)) if hx is None else hx
        return _lstm_step(F.linear(input, self.weight_ih, self.bias_ih), h, c, self.weight_hh, self.bias_hh)


class GRUCell(_CellBase):
    """One step of GRU: (N, input) and h -> h'."""

    def __init__(self, input_size, hidden_size, bias=True, device=None, dtype=None):
        super().__init__(input_size, hidden_size, bias, 3, dtype)

    def forward(self, input, hx=None):
        h = self._zeros(input) if hx is None else hx
        return _gru_step(F.linear(input, self.weight_ih, self.bias_ih), h, self.weight_hh, self.bias_hh)
