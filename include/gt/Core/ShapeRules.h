// Shape rules: the result type of an op from its operand types and attributes.
//
// Each op's spec names its rule (`shape:` in ops/*.yaml); kinds with a generic rule default to
// it (unary, broadcast, reduction, ...) and other ops have a rule of their own name. All of them
// are called through gt::inferType (gt/Core/OpTable.h), which first checks the operand count, that
// no shape attribute has a negative size and that every axis/axis-list attribute names axes of the
// first operand, and afterwards that the result's size in bytes fits in 64 bits.
//
// Every rule throws ShapeError (Python ValueError) or DTypeError (Python TypeError) naming the op
// and the offending shapes or dtypes.
#pragma once

#include "gt/Core/OpTable.h"

namespace gt::shape {

#define GT_SHAPE_RULE(name) TensorType name(const OpInfo &op, std::span<const TensorType> in, const OpAttrs &attrs)

GT_SHAPE_RULE(creation);     ///< attrs.dtype and attrs.shape; at most one 0-d operand (a fill value or seed)
GT_SHAPE_RULE(unary);        ///< the operand's shape; the dtype by op.dtypeRule
GT_SHAPE_RULE(broadcast);    ///< NumPy broadcasting; dtypes promote (bool < int32 < int64 < float32 < float64)
GT_SHAPE_RULE(select);       ///< where(cond, a, b): a bool condition; all three broadcast; a and b promote
GT_SHAPE_RULE(matmul);       ///< (..., m, k) @ (..., k, n) -> (..., m, n), 1-D operands as in NumPy
GT_SHAPE_RULE(reshape);      ///< attrs.shape, with the operand's element count
GT_SHAPE_RULE(broadcastTo);  ///< attrs.shape, which the operand must broadcast to
GT_SHAPE_RULE(slice);        ///< attrs.shape elements from attrs.starts by attrs.steps
GT_SHAPE_RULE(sliceScatter); ///< the first operand's type; the second must fit the window
GT_SHAPE_RULE(concat);       ///< the operands joined along attrs.axes[0]
GT_SHAPE_RULE(im2col);       ///< (N, C, *spatial) -> attrs.shape (N, *out, C, *kernel): a convolution's windows
GT_SHAPE_RULE(col2im);       ///< (N, *out, C, *kernel) -> attrs.shape (N, C, *spatial): im2col's adjoint
GT_SHAPE_RULE(convolution);               ///< (N, C, *spatial), (O, C / groups, *kernel) -> attrs.shape (N, O, *out)
GT_SHAPE_RULE(convolutionBackwardInput);  ///< (N, O, *out), (O, C / groups, *kernel) -> attrs.shape (N, C, *spatial)
GT_SHAPE_RULE(convolutionBackwardWeight); ///< (N, O, *out), (N, C, *spatial) -> attrs.shape (O, C / groups, *kernel)
GT_SHAPE_RULE(maxPool);                   ///< (N, C, *spatial) -> attrs.shape (N, C, *out)
GT_SHAPE_RULE(maxPoolBackward);           ///< (N, C, *out), (N, C, *spatial) -> attrs.shape (N, C, *spatial)
GT_SHAPE_RULE(transpose);    ///< permuted by attrs.axes
GT_SHAPE_RULE(reduction);    ///< attrs.axes dropped (or kept as 1 with keepdims); the dtype by op.dtypeRule
GT_SHAPE_RULE(oneHot);       ///< the operand's shape plus attrs.count classes, in attrs.dtype
GT_SHAPE_RULE(indexSelect);  ///< (x, idx 1-D): idx.size entries along the axis
GT_SHAPE_RULE(indexAdd);     ///< (idx, src) into attrs.shape: index_select's adjoint
GT_SHAPE_RULE(gather);       ///< (x, idx): idx's shape (torch.gather)
GT_SHAPE_RULE(scatterAdd);   ///< (idx, src) into attrs.shape: gather's adjoint
GT_SHAPE_RULE(same);         ///< the first operand's type (free)
GT_SHAPE_RULE(redistribute); ///< collectives and moves: the operand's dtype, attrs.shape of its rank
GT_SHAPE_RULE(send);         ///< the operand's type (send has no result)
GT_SHAPE_RULE(recv);         ///< attrs.dtype and attrs.shape

#undef GT_SHAPE_RULE

/// The dtype of a one-operand op by its dtype rule (Float, Numeric, Any, Attr, Accumulate, Index);
/// throws DTypeError naming the op.
DType ruleDType(const OpInfo &op, DType x, const OpAttrs &attrs);

} // namespace gt::shape
