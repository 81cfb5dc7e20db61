// The ops of the `gt` dialect: one op per line of include/gt/Core/Ops.def, plus the structural
// gt.region / gt.yield.
#ifndef GT_OPS_TD
#define GT_OPS_TD

include "gt/Dialect/GTDialect.td"
include "gt/Dialect/GTAttrs.td"
include "mlir/IR/BuiltinAttributes.td"
include "mlir/Interfaces/SideEffectInterfaces.td"

// Every op's verifier asks the op table (lib/Core/OpTable.cpp) for the result type.
class GT_Op<string mnemonic, list<Trait> traits = []> : Op<GT_Dialect, mnemonic, traits> {
  let hasVerifier = 1;
  let extraClassDefinition = [{
    ::mlir::LogicalResult $cppClass::verify() {
      return ::mlir::gt::verifyWithOpTable(getOperation());
    }
  }];
}

//===----------------------------------------------------------------------===//
// Creation
//===----------------------------------------------------------------------===//

def GT_UploadOp : GT_Op<"upload"> {
  let summary = "a tensor whose bytes the client sent";
  let description = [{
    The bytes travel beside the IR (in the batch), indexed by `blob`.
    ```mlir
    %0 = gt.upload {blob = 0 : i64} : tensor<2x3xf32>
    ```
  }];
  let arguments = (ins I64Attr:$blob);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = "attr-dict `:` type($result)";
}

def GT_FullOp : GT_Op<"full"> {
  let summary = "a tensor filled with one value (zeros, ones, full)";
  let description = [{
    The value is the `value` attribute or, in worker kernels (so that one compiled kernel
    serves every value), a 0-d f64 operand. Shape and dtype are the result type's.
    ```mlir
    %0 = gt.full {value = 1.0 : f64} : tensor<2x3xf32>
    %1 = gt.full(%v : tensor<f64>) : tensor<2x3xf32>
    ```
  }];
  let arguments = (ins Optional<AnyRankedTensor>:$fill, OptionalAttr<F64Attr>:$value);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = "(`(` $fill^ `:` type($fill) `)`)? attr-dict `:` type($result)";
}

def GT_RandnOp : GT_Op<"randn"> {
  let summary = "standard normal samples from a counter-based generator";
  let description = [{
    Element i is a pure function of (seed, i): splitmix64 gives two uniforms, Box-Muller
    (Box & Muller 1958) turns them into a normal sample. The same seed and shape give the same
    tensor on every worker. The seed is the `seed` attribute or a 0-d i64 operand.
    ```mlir
    %0 = gt.randn {seed = 7 : i64} : tensor<784x256xf32>
    ```
  }];
  let arguments = (ins Optional<AnyRankedTensor>:$seed_value, OptionalAttr<I64Attr>:$seed);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = "(`(` $seed_value^ `:` type($seed_value) `)`)? attr-dict `:` type($result)";
}

def GT_RandOp : GT_Op<"rand"> {
  let summary = "uniform samples in [0, 1) from a counter-based generator";
  let description = [{
    Element i is a pure function of (seed, i) (splitmix64), with as many random bits as the
    element type's mantissa holds, so a sample never rounds up to 1. Seed as for `gt.randn`.
    ```mlir
    %0 = gt.rand {seed = 7 : i64} : tensor<64x128xf32>
    ```
  }];
  let arguments = (ins Optional<AnyRankedTensor>:$seed_value, OptionalAttr<I64Attr>:$seed);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = "(`(` $seed_value^ `:` type($seed_value) `)`)? attr-dict `:` type($result)";
}

//===----------------------------------------------------------------------===//
// Elementwise
//===----------------------------------------------------------------------===//

// Shape rule: the result has the operand's shape.
class GT_UnaryOp<string mnemonic, string what> : GT_Op<mnemonic, [Pure]> {
  let summary = what;
  let description = "Elementwise; the result has the operand's shape.\n"
                    "```mlir\n%1 = gt." # mnemonic # " %0 : tensor<4xf32> -> tensor<4xf32>\n```";
  let arguments = (ins AnyRankedTensor:$input);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
}

def GT_NegOp : GT_UnaryOp<"neg", "-x">;
def GT_ExpOp : GT_UnaryOp<"exp", "e^x">;
def GT_LogOp : GT_UnaryOp<"log", "natural logarithm">;
def GT_SqrtOp : GT_UnaryOp<"sqrt", "square root">;
def GT_ReluOp : GT_UnaryOp<"relu", "max(x, 0)">;
def GT_SigmoidOp : GT_UnaryOp<"sigmoid", "1 / (1 + e^-x)">;
def GT_TanhOp : GT_UnaryOp<"tanh", "hyperbolic tangent">;
def GT_CastOp : GT_UnaryOp<"cast", "converts to the result's element type (C++ conversion rules; to bool: x != 0)">;
def GT_AbsOp : GT_UnaryOp<"abs", "|x|">;
def GT_Log1pOp : GT_UnaryOp<"log1p", "log(1 + x), accurate for small x">;
def GT_SinOp : GT_UnaryOp<"sin", "sine (radians)">;
def GT_CosOp : GT_UnaryOp<"cos", "cosine (radians)">;
def GT_RsqrtOp : GT_UnaryOp<"rsqrt", "1 / sqrt(x)">;
def GT_ErfOp : GT_UnaryOp<"erf", "the error function">;
def GT_GeluOp : GT_UnaryOp<"gelu", "x * (1 + erf(x / sqrt 2)) / 2 (Hendrycks & Gimpel 2016, exact form)">;
def GT_FloorOp : GT_UnaryOp<"floor", "the largest integer <= x (integers unchanged)">;

// Shape rule: NumPy broadcasting of the two operand shapes.
class GT_BinaryOp<string mnemonic, string what> : GT_Op<mnemonic, [Pure]> {
  let summary = what;
  let description = "Elementwise with NumPy broadcasting; dtypes promote "
                    "(bool < int32 < int64 < float32 < float64).\n"
                    "```mlir\n%2 = gt." # mnemonic # " %0, %1 : tensor<4x3xf32>, tensor<3xf32> -> tensor<4x3xf32>\n```";
  let arguments = (ins AnyRankedTensor:$lhs, AnyRankedTensor:$rhs);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = "$lhs `,` $rhs attr-dict `:` type($lhs) `,` type($rhs) `->` type($result)";
}

def GT_AddOp : GT_BinaryOp<"add", "lhs + rhs">;
def GT_SubOp : GT_BinaryOp<"sub", "lhs - rhs">;
def GT_MulOp : GT_BinaryOp<"mul", "lhs * rhs">;
def GT_DivOp : GT_BinaryOp<"div", "lhs / rhs (true division, floats only)">;
def GT_PowOp : GT_BinaryOp<"pow", "lhs ** rhs (floats only)">;
def GT_MaximumOp : GT_BinaryOp<"maximum", "max(lhs, rhs) (bool: or)">;
def GT_MinimumOp : GT_BinaryOp<"minimum", "min(lhs, rhs) (bool: and)">;
def GT_FloorDivideOp : GT_BinaryOp<"floor_divide", "floor(lhs / rhs) (Python's //; an integer division by 0 gives 0)">;
def GT_RemainderOp : GT_BinaryOp<"remainder", "lhs - floor(lhs / rhs) * rhs (Python's %, the sign of rhs; integer % 0 gives 0)">;
def GT_GtOp : GT_BinaryOp<"gt", "lhs > rhs, a bool mask">;
def GT_LtOp : GT_BinaryOp<"lt", "lhs < rhs, a bool mask">;
def GT_GeOp : GT_BinaryOp<"ge", "lhs >= rhs, a bool mask">;
def GT_LeOp : GT_BinaryOp<"le", "lhs <= rhs, a bool mask">;
def GT_EqOp : GT_BinaryOp<"eq", "lhs == rhs, a bool mask">;
def GT_NeOp : GT_BinaryOp<"ne", "lhs != rhs, a bool mask">;

def GT_WhereOp : GT_Op<"where", [Pure]> {
  let summary = "condition ? lhs : rhs";
  let description = [{
    Shape rule: the three shapes broadcast together; the condition must be bool (i1).
    ```mlir
    %3 = gt.where %m, %a, %b : tensor<4xi1>, tensor<4xf32>, tensor<f32> -> tensor<4xf32>
    ```
  }];
  let arguments = (ins AnyRankedTensor:$condition, AnyRankedTensor:$lhs, AnyRankedTensor:$rhs);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = "$condition `,` $lhs `,` $rhs attr-dict `:` type($condition) `,` type($lhs) `,` type($rhs) `->` type($result)";
}

//===----------------------------------------------------------------------===//
// Linear algebra, layout, reductions
//===----------------------------------------------------------------------===//

def GT_MatmulOp : GT_Op<"matmul", [Pure]> {
  let summary = "matrix product with NumPy's matmul rules";
  let description = [{
    (..., m, k) @ (..., k, n) -> (..., m, n); batch axes broadcast; a 1-D lhs is a row vector and
    a 1-D rhs a column vector, whose axis is dropped from the result. Floats only.
    ```mlir
    %2 = gt.matmul %x, %w : tensor<128x784xf32>, tensor<784x256xf32> -> tensor<128x256xf32>
    ```
  }];
  let arguments = (ins AnyRankedTensor:$lhs, AnyRankedTensor:$rhs);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = "$lhs `,` $rhs attr-dict `:` type($lhs) `,` type($rhs) `->` type($result)";
}

def GT_TransposeOp : GT_Op<"transpose", [Pure]> {
  let summary = "permutes axes: result axis i is input axis perm[i]";
  let description = [{
    ```mlir
    %1 = gt.transpose %0 {perm = array<i64: 1, 0>} : tensor<2x3xf32> -> tensor<3x2xf32>
    ```
  }];
  let arguments = (ins AnyRankedTensor:$input, DenseI64ArrayAttr:$perm);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
}

def GT_SliceOp : GT_Op<"slice", [Pure]> {
  let summary = "a strided window: result[i] = input[starts + i * steps] on every axis";
  let description = [{
    Shape rule: the result shape is the window's (it must fit inside the input); steps >= 1.
    ```mlir
    %1 = gt.slice %0 {starts = array<i64: 1, 0>, steps = array<i64: 2, 1>} : tensor<5x3xf32> -> tensor<2x3xf32>
    ```
  }];
  let arguments = (ins AnyRankedTensor:$input, DenseI64ArrayAttr:$starts, DenseI64ArrayAttr:$steps);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
}

def GT_SliceScatterOp : GT_Op<"slice_scatter", [Pure]> {
  let summary = "a copy of `base` whose strided window (as gt.slice) is `source`";
  let description = [{
    The gradient of gt.slice (with a zero base) and `x[i:j] = v` on tensors.
    ```mlir
    %2 = gt.slice_scatter %0, %1 {starts = array<i64: 1, 0>, steps = array<i64: 2, 1>} : tensor<5x3xf32>, tensor<2x3xf32> -> tensor<5x3xf32>
    ```
  }];
  let arguments = (ins AnyRankedTensor:$base, AnyRankedTensor:$source, DenseI64ArrayAttr:$starts,
                       DenseI64ArrayAttr:$steps);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = "$base `,` $source attr-dict `:` type($base) `,` type($source) `->` type($result)";
}

def GT_ConcatOp : GT_Op<"concat", [Pure]> {
  let summary = "joins tensors along `axis` (torch.cat)";
  let description = [{
    Shape rule: equal ranks, dtypes and sizes except along `axis`, whose sizes add up.
    ```mlir
    %2 = gt.concat %0, %1 {axis = 0 : i64} : tensor<2x3xf32>, tensor<4x3xf32> -> tensor<6x3xf32>
    ```
  }];
  let arguments = (ins Variadic<AnyRankedTensor>:$inputs, I64Attr:$axis);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = "$inputs attr-dict `:` type($inputs) `->` type($result)";
}

def GT_ReshapeOp : GT_Op<"reshape", [Pure]> {
  let summary = "same elements in row-major order, new shape (the result type's)";
  let description = [{
    Shape rule: the element count is unchanged.
    ```mlir
    %1 = gt.reshape %0 : tensor<2x3xf32> -> tensor<6xf32>
    ```
  }];
  let arguments = (ins AnyRankedTensor:$input);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
}

def GT_BroadcastToOp : GT_Op<"broadcast_to", [Pure]> {
  let summary = "repeats size-1 and missing leading axes up to the result shape";
  let description = [{
    Shape rule: broadcasting the input shape with the result shape gives the result shape.
    ```mlir
    %1 = gt.broadcast_to %0 : tensor<1x3xf32> -> tensor<4x3xf32>
    ```
  }];
  let arguments = (ins AnyRankedTensor:$input);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
}

// Shape rule: the `axes` (sorted, non-negative) are removed, or kept as size 1 with keepdims.
class GT_ReductionOp<string mnemonic, string what> : GT_Op<mnemonic, [Pure]> {
  let summary = what;
  let description = "Reduces over `axes` (sorted, non-negative); `keepdims` keeps them as size 1.\n"
                    "```mlir\n%1 = gt." # mnemonic # " %0 {axes = array<i64: 1>, keepdims = true} : tensor<4x3xf32> -> tensor<4x1xf32>\n```";
  let arguments = (ins AnyRankedTensor:$input, DenseI64ArrayAttr:$axes,
                       DefaultValuedAttr<BoolAttr, "false">:$keepdims);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
}

def GT_SumOp : GT_ReductionOp<"sum", "sum over axes (bool and int32 sum to int64)">;
def GT_MeanOp : GT_ReductionOp<"mean", "arithmetic mean over axes (floats only)">;
def GT_MaxOp : GT_ReductionOp<"max", "maximum over axes">;
def GT_MinOp : GT_ReductionOp<"min", "minimum over axes">;
def GT_ArgmaxOp : GT_ReductionOp<"argmax", "int64 index of the first maximum along the one axis in `axes`">;
def GT_ArgminOp : GT_ReductionOp<"argmin", "int64 index of the first minimum along the one axis in `axes`">;

def GT_OneHotOp : GT_Op<"one_hot", [Pure]> {
  let summary = "one-hot encoding of integer class indices";
  let description = [{
    result[..., c] = (input[...] == c); the result's element type is chosen by its type.
    Shape rule: input shape + [num_classes].
    ```mlir
    %1 = gt.one_hot %0 {num_classes = 10 : i64} : tensor<128xi64> -> tensor<128x10xf32>
    ```
  }];
  let arguments = (ins AnyRankedTensor:$input, I64Attr:$num_classes);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
}

// Gathers and their adjoints. Indices are int32/int64; out-of-range indices are clamped into
// range on the worker (the client checks indices whose values it knows).

def GT_IndexSelectOp : GT_Op<"index_select", [Pure]> {
  let summary = "result[..., k, ...] = input[..., indices[k], ...] along `axis` (1-D indices)";
  let description = [{
    Embedding lookups and integer-array indexing.
    ```mlir
    %2 = gt.index_select %w, %i {axis = 0 : i64} : tensor<65x32xf32>, tensor<8xi64> -> tensor<8x32xf32>
    ```
  }];
  let arguments = (ins AnyRankedTensor:$input, AnyRankedTensor:$indices, I64Attr:$axis);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = "$input `,` $indices attr-dict `:` type($input) `,` type($indices) `->` type($result)";
}

def GT_IndexAddOp : GT_Op<"index_add", [Pure]> {
  let summary = "zeros of the result type plus source[..., k, ...] added at [..., indices[k], ...]";
  let description = [{
    The gradient of gt.index_select: repeated indices accumulate. Lowered densely (every
    output row compares every index), so its cost is result size x number of indices.
    ```mlir
    %2 = gt.index_add %i, %g {axis = 0 : i64} : tensor<8xi64>, tensor<8x32xf32> -> tensor<65x32xf32>
    ```
  }];
  let arguments = (ins AnyRankedTensor:$indices, AnyRankedTensor:$source, I64Attr:$axis);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = "$indices `,` $source attr-dict `:` type($indices) `,` type($source) `->` type($result)";
}

def GT_GatherOp : GT_Op<"gather", [Pure]> {
  let summary = "torch.gather: result[i][j] = input[indices[i][j]][j] for axis 0, likewise for others";
  let description = [{
    The indices have the input's sizes on every axis but `axis`; the result has their shape.
    ```mlir
    %2 = gt.gather %x, %i {axis = 1 : i64} : tensor<4x10xf32>, tensor<4x1xi64> -> tensor<4x1xf32>
    ```
  }];
  let arguments = (ins AnyRankedTensor:$input, AnyRankedTensor:$indices, I64Attr:$axis);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = "$input `,` $indices attr-dict `:` type($input) `,` type($indices) `->` type($result)";
}

def GT_ScatterAddOp : GT_Op<"scatter_add", [Pure]> {
  let summary = "zeros of the result type with source[i][j] added at [indices[i][j]][j] (axis 0)";
  let description = [{
    The gradient of gt.gather; repeated indices accumulate; lowered densely like gt.index_add.
    ```mlir
    %2 = gt.scatter_add %i, %g {axis = 1 : i64} : tensor<4x1xi64>, tensor<4x1xf32> -> tensor<4x10xf32>
    ```
  }];
  let arguments = (ins AnyRankedTensor:$indices, AnyRankedTensor:$source, I64Attr:$axis);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = "$indices `,` $source attr-dict `:` type($indices) `,` type($source) `->` type($result)";
}

//===----------------------------------------------------------------------===//
// Lifetime
//===----------------------------------------------------------------------===//

def GT_FreeOp : GT_Op<"free"> {
  let summary = "the client dropped its last reference to a tensor";
  let description = [{
    The value must not be used afterwards (`gt-verify` checks this).
    ```mlir
    gt.free %0 : tensor<2x3xf32>
    ```
  }];
  let arguments = (ins AnyRankedTensor:$input);
  let assemblyFormat = "$input attr-dict `:` type($input)";
}

//===----------------------------------------------------------------------===//
// Distribution (mesh dialect vocabulary). In the dispatcher's global view every value has
// its logical shape, so these ops keep the type and change only the layout (`gt.sharding`);
// after `gt-split-by-worker` each worker's function holds local shapes.
//===----------------------------------------------------------------------===//

def GT_ShardOp : GT_Op<"shard"> {
  let summary = "re-lays a value out as its signal says (gt.signal.tensor)";
  let description = [{
    The value is unchanged; `gt-apply-signals` gives the result the layout of the op's
    `gt.signal` and `gt-insert-collectives` adds whatever data movement that needs.
    ```mlir
    %1 = gt.shard %0 {gt.signal = "data"} : tensor<8x4xf32> -> tensor<8x4xf32>
    ```
  }];
  let arguments = (ins AnyRankedTensor:$input);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
}

def GT_AllReduceOp : GT_Op<"all_reduce"> {
  let summary = "partial -> replicated: every worker of the group gets the sum (max, min) of all parts";
  let description = [{
    ```mlir
    %1 = gt.all_reduce %0 {workers = array<i64: 0, 1>, reduce = "sum"} : tensor<4x3xf32> -> tensor<4x3xf32>
    ```
  }];
  let arguments = (ins AnyRankedTensor:$input, DenseI64ArrayAttr:$workers,
                       DefaultValuedStrAttr<StrAttr, "sum">:$reduce);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
}

def GT_AllGatherOp : GT_Op<"all_gather"> {
  let summary = "split(axis) -> replicated: every worker gets the blocks of all ranks joined along `axis`";
  let arguments = (ins AnyRankedTensor:$input, DenseI64ArrayAttr:$workers, I64Attr:$axis);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
}

def GT_ReduceScatterOp : GT_Op<"reduce_scatter"> {
  let summary = "partial -> split(axis): rank r gets block r of the reduction of all parts";
  let arguments = (ins AnyRankedTensor:$input, DenseI64ArrayAttr:$workers, I64Attr:$axis,
                       DefaultValuedStrAttr<StrAttr, "sum">:$reduce);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
}

def GT_AllToAllOp : GT_Op<"all_to_all"> {
  let summary = "split(concat_axis) -> split(split_axis): each rank exchanges blocks with every other";
  let description = [{
    As the mesh dialect's `mesh.all_to_all`: each rank cuts its block along `split_axis` into
    one piece per rank and sends piece r to rank r; the pieces a rank receives are
    concatenated along `concat_axis`. So the input is split along `concat_axis` and the
    result along `split_axis`.
  }];
  let arguments = (ins AnyRankedTensor:$input, DenseI64ArrayAttr:$workers, I64Attr:$split_axis,
                       I64Attr:$concat_axis);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
}

def GT_AllSliceOp : GT_Op<"all_slice"> {
  let summary = "replicated -> split(axis): each rank keeps its block; no data moves";
  let arguments = (ins AnyRankedTensor:$input, DenseI64ArrayAttr:$workers, I64Attr:$axis);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
}

def GT_MoveOp : GT_Op<"move"> {
  let summary = "the same layout on another group of workers (pipeline stages)";
  let description = [{
    Rank r of `to` receives what rank r of `from` holds (replicated values: rank r mod
    |from|). A replicated value whose move result is split (its `gt.sharding`) is scattered:
    rank r of `to` receives only its block. `gt-split-by-worker` turns it into `gt.send` /
    `gt.recv` pairs (after a `gt.slice` of the block, for a scatter).
    ```mlir
    %1 = gt.move %0 {from = array<i64: 0, 1>, to = array<i64: 2, 3>} : tensor<8x4xf32> -> tensor<8x4xf32>
    ```
  }];
  let arguments = (ins AnyRankedTensor:$input, DenseI64ArrayAttr:$from, DenseI64ArrayAttr:$to);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
}

def GT_SendOp : GT_Op<"send"> {
  let summary = "sends a worker's tensor to worker `peer` (one half of a gt.move)";
  let arguments = (ins AnyRankedTensor:$input, I64Attr:$peer);
  let assemblyFormat = "$input attr-dict `:` type($input)";
}

def GT_RecvOp : GT_Op<"recv"> {
  let summary = "receives a tensor from worker `peer` (the other half of a gt.move)";
  let arguments = (ins I64Attr:$peer);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = "attr-dict `:` type($result)";
}

//===----------------------------------------------------------------------===//
// Regions (structure, not instructions: not in the op table)
//===----------------------------------------------------------------------===//

def GT_RegionOp : Op<GT_Dialect, "region", [IsolatedFromAbove, SingleBlock,
    SingleBlockImplicitTerminator<"::mlir::gt::YieldOp">]> {
  let summary = "a run of fusible ops a worker compiles as one fused kernel set";
  let description = [{
    Built by `gt-mark-hot-regions` around a run of elementwise ops, reductions, broadcasts,
    transposes, reshapes and fills that run on one worker. Block arguments stand for
    `inputs` (values made outside the region); `gt.yield` names the results that are used
    after the region or live on into later batches. `gt.free` of values that never leave
    the region sits at the end of the body.

    `key` is a 64-bit hash (hex) of the region's structure: every op with its attributes,
    operand wiring, dtypes and shapes, and which values are yielded. Fill values are not
    part of it: a worker passes them to the compiled kernel at run time, so a loop whose
    scalars change (learning rates, Adam's bias corrections) still replays one kernel.
    `hot` marks a region whose key has been seen often enough to compile (or that a
    `compile: true` signal forced).
    ```mlir
    %r = gt.region(%x, %b) {key = "8d2c41e0f3a9b7c5", hot} : (tensor<4x3xf32>, tensor<3xf32>) -> tensor<4x3xf32> {
    ^bb0(%a: tensor<4x3xf32>, %c: tensor<3xf32>):
      %0 = gt.add %a, %c : tensor<4x3xf32>, tensor<3xf32> -> tensor<4x3xf32>
      %1 = gt.relu %0 : tensor<4x3xf32> -> tensor<4x3xf32>
      gt.free %0 : tensor<4x3xf32>
      gt.yield %1 : tensor<4x3xf32>
    }
    ```
  }];
  let arguments = (ins Variadic<AnyRankedTensor>:$inputs, StrAttr:$key, UnitAttr:$hot);
  let results = (outs Variadic<AnyRankedTensor>:$results);
  let regions = (region SizedRegion<1>:$body);
  let assemblyFormat = "`(` $inputs `)` attr-dict `:` functional-type($inputs, $results) $body";
  let hasVerifier = 1;
}

def GT_YieldOp : Op<GT_Dialect, "yield", [Pure, Terminator, HasParent<"RegionOp">]> {
  let summary = "the values a gt.region produces";
  let arguments = (ins Variadic<AnyRankedTensor>:$values);
  let assemblyFormat = "($values^ `:` type($values))? attr-dict";
  let builders = [OpBuilder<(ins), [{ /* empty yield */ }]>];
}

#endif // GT_OPS_TD
