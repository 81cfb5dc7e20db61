// The ops of the `gt` dialect (GTOps.td) and the bridge to the op table in lib/Core.
#pragma once

#include "gt/Core/OpTable.h"
#include "gt/Core/Sharding.h"
#include "gt/Dialect/GTDialect.h"

#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/OperationSupport.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

namespace mlir::gt {

/// Checks `op` against the op table: operand count, dtypes, shapes and the result type.
/// Sizes must be static, except for elementwise ops inside an op carrying kDynamicSizesAttr.
LogicalResult verifyWithOpTable(Operation *op);

/// A unit attribute on a worker's kernel function: its elementwise ops may have `?` sizes
/// (memref<?x8xf32> arguments whose sizes come at run time; see the Executor's size-generic
/// kernels). Everywhere else, in particular in the dispatcher, gt ops have static shapes.
inline constexpr const char *kDynamicSizesAttr = "gt.dynamic_sizes";

/// The op table entry of a gt op, or nullptr for any other op.
const ::gt::OpInfo *opInfoOf(Operation *op);

/// MLIR element type <-> GT dtype (f32, f64, f16, bf16, i32, i64, i1).
std::optional<::gt::DType> toDType(Type elementType);
Type toElementType(MLIRContext *ctx, ::gt::DType dtype);
RankedTensorType toTensorType(MLIRContext *ctx, const ::gt::TensorType &type);
/// Fails (nullopt) for unranked, dynamic or unsupported element types.
std::optional<::gt::TensorType> fromTensorType(Type type);

/// Reads the op-table attributes of a gt op (axes, keepdims, value, seed, count; shape and
/// dtype from its result type).
::gt::OpAttrs attrsOf(Operation *op);
/// The MLIR attributes an op of `code` carries for `attrs` (the inverse of attrsOf).
void appendAttrs(Builder &b, ::gt::OpCode code, const ::gt::OpAttrs &attrs, NamedAttrList &out);

/// Creates `gt.<mnemonic of code>` at `b`'s insertion point with `operands`, the attributes
/// `attrs` and result type `result` (null for ops without a result: free, send).
Operation *createOp(OpBuilder &b, Location loc, ::gt::OpCode code, ValueRange operands, const NamedAttrList &attrs,
                    Type result);
/// The same, with the op-table attributes `attrs` (through appendAttrs).
Operation *createOp(OpBuilder &b, Location loc, ::gt::OpCode code, ValueRange operands, const ::gt::OpAttrs &attrs,
                    Type result);

} // namespace mlir::gt

#define GET_ATTRDEF_CLASSES
#include "gt/Dialect/GTAttrs.h.inc"

#define GET_OP_CLASSES
#include "gt/Dialect/GTOps.h.inc"
