// The op table: every GT op's arity, typed attributes, dtype rule and shape rule.
//
// The table is generated from the op spec (ops/*.yaml, by ops/generate.py at build time);
// this header declares its types and the functions over it. The Python client (to raise errors
// at the user's line and to know `.shape` without a round trip), the `gt` dialect's verifiers and
// the worker all call `inferType`; nothing else decides what an op produces.
#pragma once

#include "gt/Core/DType.h"

#include <span>
#include <string_view>

namespace gt {

/// The ops in spec order (ops/*.yaml); the number is the op's code on the wire.
enum class OpCode : uint16_t {
#include "gt/Core/OpCodes.inc"
  NumOps
};

enum class OpKind : uint8_t { Creation, Unary, Binary, Compare, Select, Matmul, Layout, Reduction, Index, Lifetime, Distribution };

/// The storage of an instruction's attributes: the fields that the wire (gt.capnp) carries. Each
/// op declares which of them it uses, under which name and type (OpInfo::attrs, from the spec);
/// the generic code below (findAttr, getInt, appendAttrsKey, clearUndeclared) reads them through
/// those declarations, so a field an op does not declare never reaches a kernel or a plan key.
struct OpAttrs {
  // What each field holds for an op is in the op's spec (ops/*.yaml: an attribute's `storage`);
  // the comments give the common uses.
  Shape shape;               ///< a result shape (upload, full, reshape, slice, index_add, collectives)
  std::vector<int64_t> axes; ///< axes (reductions: normalized, sorted), a permutation (transpose) or {axis}
  std::vector<int64_t> starts; ///< slice/slice_scatter: first index along every axis (>= 0)
  std::vector<int64_t> steps;  ///< slice/slice_scatter: stride along every axis (>= 1)
  bool keepdims = false;     ///< reductions: keep reduced axes as size 1
  double value = 0.0;        ///< full: the fill value
  int64_t seed = 0;          ///< randn/rand: the random stream (same seed and shape -> same values)
  int64_t count = 0;         ///< an integer attribute (one_hot: the number of classes)
  DType dtype = DType::Float32; ///< upload/full/randn/cast/recv: the result dtype
  std::vector<int64_t> workers; ///< collectives: the group in rank order; move: the destinations;
                                ///< send/recv: {peer worker}
  std::vector<int64_t> sources; ///< move: the workers that hold the value
  uint8_t reduce = 0;           ///< all_reduce/reduce_scatter: a gt::ReduceKind (sum, max, min)
};

/// The type of an op attribute (ops/README.md): i64, i64[], f64, bool, a dtype, a shape, or a
/// reduction kind ("sum", "max", "min").
enum class AttrType : uint8_t { I64, I64Array, F64, Bool, DType, Shape, Reduce };
/// Where an attribute lives in OpAttrs.
enum class AttrSlot : uint8_t { None, Shape, Axes, Starts, Steps, Keepdims, Value, Seed, Count, DType, Workers, Sources, Reduce };
/// Where an attribute lives in MLIR: an attribute of the op, the result type (shape, dtype), or
/// only in MLIR (upload's blob index, not in OpAttrs).
enum class AttrPlace : uint8_t { Attribute, Result, MlirOnly };

/// One declared attribute of an op.
struct AttrSpec {
  const char *name;   ///< its name in MLIR, Python and error messages ("axes", "perm")
  AttrType type;
  AttrSlot slot;
  int8_t index;       ///< -1: the whole slot; k: element k of a list slot (one axis of `axes`)
  AttrPlace place;
  bool runtime;       ///< a value kernels take at run time (fill values, seeds): not in any key
  const char *defaultValue; ///< "" when the attribute has no default
  bool namesAxes;     ///< spec type axis/axes: axes of the first operand, each in [0, rank)
};

/// How the generic shape functions decide the result dtype (the spec's `dtype:`).
enum class DTypeRule : uint8_t {
  None, Float, Numeric, Any, Attr, FloatAttr, Promote, PromoteFloat, PromoteOrBool, Bool,
  Accumulate, ///< sums: bool and int32 give int64, other dtypes are kept
  Index,      ///< an int64 index (argmax); the operand must not be bool
  Integral,   ///< integer or bool operands, promoting (bitwise ops); floating point is refused
};

/// How gt-propagate-sharding lays an op out across workers (the spec's `sharding:`; the rules
/// are in lib/Dialect/Transforms/PropagateSharding.cpp).
enum class ShardingRule : uint8_t {
  Replicated,   ///< every operand whole on the op's workers
  Creation,     ///< as a `shard:` signal says, else replicated
  Elementwise,  ///< a split operand's axis splits the result (partial sums pass through add/sub)
  Batch,        ///< elementwise over all axes but the last two, which stay whole (tril, triu)
  OutsideAxes,  ///< elementwise over the axes that no axis/axes attribute names (cumsum, flip)
  FirstAxis,    ///< a split first axis (the batch) splits the result's first axis; others gather (im2col)
  Matmul, Reduction, Layout, Index, Distribution, ///< rules of their own per op
  Windows,      ///< convolutions, pools: a split batch (first axis) splits the result's; weights whole
};

struct OpInfo;
/// A shape rule (gt/Core/ShapeRules.h): the result type of an op from its operand types and
/// attributes; throws ShapeError / DTypeError naming the op.
using ShapeFn = TensorType (*)(const OpInfo &, std::span<const TensorType>, const OpAttrs &);

struct OpInfo {
  OpCode code;
  const char *mnemonic; ///< "add"; the dialect op is "gt.add"
  OpKind kind;
  int arity;            ///< operand count, -1 when variadic or optional operands exist (concat, full)
  int results;          ///< 0 (free, send) or 1
  DTypeRule dtypeRule;
  bool fusible;         ///< may sit in a fused region (gt.region)
  bool differentiable;  ///< has derivative formulas (gt/Core/Derivatives.h)
  std::span<const AttrSpec> attrs;
  const char *summary;  ///< one line, from the spec
  ShapeFn shape;        ///< the shape rule (spec `shape:`)
  ShardingRule sharding;
  int8_t partial;       ///< reductions: the gt::ReduceKind whose partial results a split reduced
                        ///< axis gives (sum: sum and mean), -1: none (the input is gathered first)
  int8_t minRank;       ///< the first operand needs at least this many axes (tril: 2)
};

/// The most tensors one concat op joins (its kernel takes each as an argument; gt.cat joins
/// longer lists in steps).
inline constexpr int kMaxConcatOperands = 32;

/// The most tensors one free instruction names. On the wire (client -> dispatcher ->
/// worker) a free names every tensor dropped at that point of the program: a client sends
/// the tensors released since its last op as one free, and a plan sends consecutive frees as
/// one (a training step releases about as many tensors as it makes, half of its
/// instructions). In the dispatcher's IR each `gt.free` frees one value.
inline constexpr int kMaxFreeOperands = 1024;

/// Whether `code` declares a value or seed attribute: what each run of a kept (replayed)
/// program brings for such an instruction (Batch.values / Batch.seeds), the rest staying as
/// the plan made them.
bool declaresValueOrSeed(OpCode code);

/// Throws std::out_of_range for a code that is not an op.
const OpInfo &opInfo(OpCode code);
/// Whether `code` may sit in a fused region (gt.region): fills, elementwise, where, layout,
/// reductions, indexing. Not upload/randn (data), matmul (BLAS/cuBLAS) or free.
bool isFusible(OpCode code);
/// Whether element i of the result depends only on the operands' elements at i (broadcasting
/// aside): the unary, binary and compare ops of ops/elementwise.yaml, and where. Not tril, triu
/// or cumsum, which are unary in kind but read positions.
bool isElementwise(OpCode code);
/// sum, mean, max, min and prod: one value per kept position (not argmax/argmin).
bool isValueReduction(OpCode code);
/// A text form of the declared attributes that shape an op's code (not fill values or seeds,
/// which kernels take at run time, nor the result shape and dtype, which keys carry anyway):
/// part of kernel keys.
std::string attrsKey(OpCode code, const OpAttrs &attrs);
/// Appends every declared attribute of `code` but the runtime ones (the result shape and dtype
/// included) to `key` as bytes: the dispatcher's plan key. Two instructions of one op whose
/// non-runtime attributes differ never give the same bytes.
void appendAttrsKey(OpCode code, const OpAttrs &attrs, std::string &key);
/// Resets the fields of `attrs` that `code` does not declare, so that nothing an op ignores can
/// make two equal instructions look different (or two different ones look equal).
void clearUndeclared(OpCode code, OpAttrs &attrs);
/// Looks an op up by its mnemonic ("add"); nullptr if there is none.
const OpInfo *lookupOp(std::string_view mnemonic);
/// The declared attribute `name` of `code`, or nullptr.
const AttrSpec *findAttr(OpCode code, std::string_view name);

/// Typed access to a declared attribute's storage (std::out_of_range for an element of a list
/// slot that the list does not have).
int64_t getInt(const OpAttrs &attrs, const AttrSpec &spec);                    ///< I64, Bool, DType, Reduce (as codes); std::logic_error for F64
std::vector<int64_t> getInts(const OpAttrs &attrs, const AttrSpec &spec);      ///< I64Array, Shape
void setInt(OpAttrs &attrs, const AttrSpec &spec, int64_t value);
void setInts(OpAttrs &attrs, const AttrSpec &spec, std::vector<int64_t> values);

/// The result type of `code` applied to operands of types `operands` with `attrs`: checks the
/// operand count, the op's minimum rank, that shape attributes have no negative size and that
/// axis attributes name axes of the first operand, then applies the op's shape rule (its spec's
/// `shape:`, a function of gt/Core/ShapeRules.h, where each rule is described) and checks that
/// the result's size in bytes fits in 64 bits.
///
/// Throws ShapeError (Python ValueError) or DTypeError (Python TypeError) naming the op and the
/// offending shapes or dtypes; ShapeError also when the result's size in bytes does not fit in
/// 64 bits; std::invalid_argument for a wrong operand count or an unknown op code.
TensorType inferType(OpCode code, std::span<const TensorType> operands, const OpAttrs &attrs);

/// Normalizes reduction axes for rank `rank`: negative axes count from the end, an empty list
/// means all axes, duplicates are an error. Returns them sorted.
std::vector<int64_t> normalizeAxes(std::span<const int64_t> axes, int64_t rank);

/// Whether transpose permutation `perm` swaps the last two axes and keeps the others (x.mT,
/// x.T of a matrix): the transpose a matmul can take as a transposed BLAS operand.
bool swapsLastTwoAxes(std::span<const int64_t> perm);

} // namespace gt
