// The gt ops' verifiers and the bridge between MLIR types/attributes and the op table.
#include "gt/Dialect/GTOps.h"

#include "mlir/IR/BuiltinAttributes.h"

using namespace mlir;
using namespace mlir::gt;
namespace core = ::gt;

std::optional<core::DType> mlir::gt::toDType(Type t) {
  if (t.isF32()) return core::DType::Float32;
  if (t.isF64()) return core::DType::Float64;
  if (t.isF16()) return core::DType::Float16;
  if (t.isBF16()) return core::DType::BFloat16;
  if (t.isSignlessInteger(64)) return core::DType::Int64;
  if (t.isSignlessInteger(32)) return core::DType::Int32;
  if (t.isSignlessInteger(1)) return core::DType::Bool;
  if (t.isSignlessInteger(8)) return core::DType::Int8;
  if (t.isSignlessInteger(16)) return core::DType::Int16;
  if (t.isUnsignedInteger(8)) return core::DType::UInt8;
  return std::nullopt;
}

Type mlir::gt::toElementType(MLIRContext *ctx, core::DType dtype) {
  Builder b(ctx);
  switch (dtype) {
  case core::DType::Float32: return b.getF32Type();
  case core::DType::Float64: return b.getF64Type();
  case core::DType::Float16: return b.getF16Type();
  case core::DType::BFloat16: return b.getBF16Type();
  case core::DType::Int32: return b.getI32Type();
  case core::DType::Int64: return b.getI64Type();
  case core::DType::Bool: return b.getI1Type();
  case core::DType::Int8: return b.getIntegerType(8);
  case core::DType::Int16: return b.getIntegerType(16);
  case core::DType::UInt8: return b.getIntegerType(8, /*isSigned=*/false);
  }
  return {};
}

RankedTensorType mlir::gt::toTensorType(MLIRContext *ctx, const core::TensorType &type) {
  return RankedTensorType::get(type.shape, toElementType(ctx, type.dtype));
}

std::optional<core::TensorType> mlir::gt::fromTensorType(Type type) {
  auto tensor = dyn_cast<RankedTensorType>(type);
  if (!tensor || !tensor.hasStaticShape()) return std::nullopt;
  auto dtype = toDType(tensor.getElementType());
  if (!dtype) return std::nullopt;
  return core::TensorType{*dtype, core::Shape(tensor.getShape().begin(), tensor.getShape().end())};
}

const core::OpInfo *mlir::gt::opInfoOf(Operation *op) {
  if (!isa<GTDialect>(op->getDialect())) return nullptr;
  return core::lookupOp(op->getName().stripDialect());
}

core::OpAttrs mlir::gt::attrsOf(Operation *op) {
  core::OpAttrs attrs;
  if (op->getNumResults() == 1) {
    if (auto t = fromTensorType(op->getResult(0).getType())) {
      attrs.shape = t->shape;
      attrs.dtype = t->dtype;
    } else if (auto tensor = dyn_cast<RankedTensorType>(op->getResult(0).getType())) { // `?` sizes: the dtype only
      if (auto dtype = toDType(tensor.getElementType())) attrs.dtype = *dtype;
    }
  }
  const core::OpInfo *info = opInfoOf(op);
  if (!info) return attrs;
  // Every attribute the op's spec declares, by name and type (ops/*.yaml).
  for (const core::AttrSpec &spec : info->attrs) {
    if (spec.place != core::AttrPlace::Attribute) continue;
    Attribute a = op->getAttr(spec.name);
    if (!a) continue;
    switch (spec.type) {
    case core::AttrType::I64Array:
      if (auto v = dyn_cast<DenseI64ArrayAttr>(a)) core::setInts(attrs, spec, {v.asArrayRef().begin(), v.asArrayRef().end()});
      break;
    case core::AttrType::I64:
      if (auto v = dyn_cast<IntegerAttr>(a)) core::setInt(attrs, spec, v.getInt());
      break;
    case core::AttrType::Bool:
      if (auto v = dyn_cast<BoolAttr>(a)) core::setInt(attrs, spec, v.getValue());
      break;
    case core::AttrType::F64:
      if (auto v = dyn_cast<FloatAttr>(a)) attrs.value = v.getValueAsDouble();
      break;
    case core::AttrType::Reduce:
      if (auto v = dyn_cast<StringAttr>(a))
        core::setInt(attrs, spec, int64_t(v.getValue() == "max"   ? core::ReduceKind::Max
                                          : v.getValue() == "min" ? core::ReduceKind::Min
                                                                  : core::ReduceKind::Sum));
      break;
    case core::AttrType::DType: case core::AttrType::Shape: break; // in the result type
    }
  }
  return attrs;
}

void mlir::gt::appendAttrs(Builder &b, core::OpCode code, const core::OpAttrs &attrs, NamedAttrList &out) {
  for (const core::AttrSpec &spec : core::opInfo(code).attrs) {
    if (spec.place != core::AttrPlace::Attribute) continue;
    switch (spec.type) {
    case core::AttrType::I64Array: out.append(spec.name, b.getDenseI64ArrayAttr(core::getInts(attrs, spec))); break;
    case core::AttrType::I64: {
      // A missing list element (a malformed instruction) becomes 0; the verifier then names the problem.
      int64_t v = 0;
      try {
        v = core::getInt(attrs, spec);
      } catch (const std::out_of_range &) {
      }
      out.append(spec.name, b.getI64IntegerAttr(v));
      break;
    }
    case core::AttrType::Bool: out.append(spec.name, b.getBoolAttr(core::getInt(attrs, spec) != 0)); break;
    case core::AttrType::F64: out.append(spec.name, b.getF64FloatAttr(attrs.value)); break;
    case core::AttrType::Reduce:
      out.append(spec.name, b.getStringAttr(core::reduceName(core::ReduceKind(attrs.reduce))));
      break;
    case core::AttrType::DType: case core::AttrType::Shape: break;
    }
  }
}

Operation *mlir::gt::createOp(OpBuilder &b, Location loc, core::OpCode code, ValueRange operands,
                              const NamedAttrList &attrs, Type result) {
  OperationState state(loc, std::string("gt.") + core::opInfo(code).mnemonic);
  state.addOperands(operands);
  if (result) state.addTypes(result);
  state.addAttributes(attrs);
  return b.create(state);
}

Operation *mlir::gt::createOp(OpBuilder &b, Location loc, core::OpCode code, ValueRange operands,
                              const core::OpAttrs &attrs, Type result) {
  NamedAttrList list;
  appendAttrs(b, code, attrs, list);
  return createOp(b, loc, code, operands, list, result);
}

namespace {
bool hasDynamicSizes(Operation *op) {
  auto dynamic = [](Type t) {
    auto tensor = dyn_cast<RankedTensorType>(t);
    return tensor && !tensor.hasStaticShape();
  };
  return llvm::any_of(op->getOperandTypes(), dynamic) || llvm::any_of(op->getResultTypes(), dynamic);
}

bool insideSizeGenericKernel(Operation *op) {
  for (Operation *p = op->getParentOp(); p; p = p->getParentOp())
    if (p->hasAttr(kDynamicSizesAttr)) return true;
  return false;
}

/// An elementwise op, a reduction or an index_select (its indices' count) of a size-generic
/// kernel: every `?` is taken as 1 (which broadcasts to any size), the op table infers the
/// result, and it must agree in dtype, rank and every size that both sides know.
LogicalResult verifyDynamicSizes(Operation *op, const core::OpInfo &info) {
  if (!core::isElementwise(info.code) && !core::isValueReduction(info.code) && info.code != core::OpCode::IndexSelect)
    return op->emitOpError("takes dynamic sizes only as an elementwise op, a sum, mean, max, min or prod, or an index_select");
  if (info.code == core::OpCode::IndexSelect && op->getNumOperands() == 2 &&
      !cast<RankedTensorType>(op->getOperand(0).getType()).hasStaticShape())
    return op->emitOpError("takes dynamic sizes only in its indices");
  auto stand_in = [](Type t) -> std::optional<core::TensorType> {
    auto tensor = dyn_cast<RankedTensorType>(t);
    auto dtype = tensor ? toDType(tensor.getElementType()) : std::nullopt;
    if (!dtype) return std::nullopt;
    core::Shape shape(tensor.getShape().begin(), tensor.getShape().end());
    for (int64_t &d : shape)
      if (d == ShapedType::kDynamic) d = 1;
    return core::TensorType{*dtype, shape};
  };
  std::vector<core::TensorType> operands;
  for (Type t : op->getOperandTypes()) {
    auto s = stand_in(t);
    if (!s) return op->emitOpError("operands must be ranked tensors of f32, f64, f16, bf16, i32, i64 or i1, got ") << t;
    operands.push_back(*s);
  }
  auto result = cast<RankedTensorType>(op->getResult(0).getType());
  try {
    core::TensorType expected = core::inferType(info.code, operands, attrsOf(op));
    bool ok = toDType(result.getElementType()) == expected.dtype && result.getRank() == int64_t(expected.shape.size());
    for (int64_t d = 0; ok && d < result.getRank(); ++d)
      ok = result.isDynamicDim(d) || expected.shape[size_t(d)] == 1 || result.getDimSize(d) == expected.shape[size_t(d)];
    if (!ok) return op->emitOpError("result type ") << result << " does not fit its operands by the op table";
  } catch (const std::exception &e) {
    return op->emitOpError(e.what());
  }
  return success();
}
} // namespace

LogicalResult mlir::gt::verifyWithOpTable(Operation *op) {
  const core::OpInfo *info = opInfoOf(op);
  if (!info) return op->emitOpError("is not in GT's op table");
  if (hasDynamicSizes(op) && insideSizeGenericKernel(op)) return verifyDynamicSizes(op, *info);
  std::vector<core::TensorType> operands;
  for (Value v : op->getOperands()) {
    auto t = fromTensorType(v.getType());
    if (!t)
      return op->emitOpError("operands must be statically shaped tensors of f32, f64, f16, bf16, i32, i64 or i1, got ")
             << v.getType();
    operands.push_back(*t);
  }
  if (info->code == core::OpCode::Full && op->getNumOperands() == 0 && !op->hasAttr("value"))
    return op->emitOpError("needs a `value` attribute or a fill operand");
  if ((info->code == core::OpCode::Randn || info->code == core::OpCode::Rand) && op->getNumOperands() == 0 &&
      !op->hasAttr("seed"))
    return op->emitOpError("needs a `seed` attribute or a seed operand");
  if (info->code == core::OpCode::Free || info->code == core::OpCode::Send) return success();
  core::OpAttrs attrs = attrsOf(op);
  auto resultType = fromTensorType(op->getResult(0).getType());
  if (!resultType)
    return op->emitOpError("result must be a statically shaped tensor of f32, f64, f16, bf16, i32, i64 or i1, got ")
           << op->getResult(0).getType();
  try {
    core::TensorType expected = core::inferType(info->code, operands, attrs);
    if (!(expected == *resultType))
      return op->emitOpError("result type should be ")
             << toTensorType(op->getContext(), expected) << " by the op table, got "
             << op->getResult(0).getType();
  } catch (const std::exception &e) {
    return op->emitOpError(e.what());
  }
  return success();
}

LogicalResult RegionOp::verify() {
  Block &body = getBody().front();
  if (body.getNumArguments() != getInputs().size())
    return emitOpError("has ") << getInputs().size() << " inputs but its body takes "
                               << body.getNumArguments() << " arguments";
  for (auto [input, arg] : llvm::zip(getInputs(), body.getArguments()))
    if (input.getType() != arg.getType())
      return emitOpError("input type ") << input.getType() << " does not match body argument type " << arg.getType();
  auto yield = cast<YieldOp>(body.getTerminator());
  if (TypeRange(yield.getValues()) != getResultTypes())
    return emitOpError("yields ") << yield.getValues().getTypes() << " but its results are " << getResultTypes();
  for (Operation &op : body.without_terminator())
    if (!opInfoOf(&op)) return op.emitOpError("cannot appear inside a gt.region");
  return success();
}

#define GET_OP_CLASSES
#include "gt/Dialect/GTOps.cpp.inc"
