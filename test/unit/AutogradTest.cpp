// The client core's backward formulas (gt/Client/Autograd.h) on an emitter that only infers
// types: which ops a formula emits, with which shapes and dtypes. The values themselves are
// checked end to end by the Python autograd tests (test/python/test_autograd*.py).
#include "gt/Client/Autograd.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <map>
#include <string>

using namespace gt;
using namespace gt::client;

namespace {

/// Infers each op's type with the op table and records "mnemonic shape dtype".
struct TypeEmitter : GradEmitter {
  uint64_t next = 100;
  std::vector<std::string> log;

  GradValue op(OpCode code, const std::vector<GradValue> &operands, const GradAttrs &attrs) override {
    const GradValue *like = nullptr;
    for (const auto &o : operands)
      if (o.isTensor()) {
        like = &o;
        break;
      }
    if (!like && !operands.empty()) throw std::logic_error("an op of numbers alone"); // as gt's _op
    std::vector<TensorType> types;
    for (const auto &o : operands) {
      if (o.isTensor()) {
        types.push_back(o.type);
        continue;
      }
      DType d = o.isFloat ? (like && isFloating(like->type.dtype) ? like->type.dtype : DType::Float32)
                          : (like && like->type.dtype != DType::Bool ? like->type.dtype : DType::Int64);
      types.push_back(TensorType{d, {}});
    }
    OpAttrs a;
    for (const auto &[name, v] : attrs) {
      const AttrSpec *spec = findAttr(code, name);
      if (!spec) throw std::logic_error("no attribute " + std::string(name));
      if (v.kind == GradValue::Kind::Ints) setInts(a, *spec, v.ints);
      else if (spec->type == AttrType::F64) a.value = v.number;
      else setInt(a, *spec, int64_t(v.number));
    }
    TensorType t = inferType(code, types, a);
    log.push_back(std::string(opInfo(code).mnemonic) + " " + dtypeName(t.dtype) + shapeString(t.shape));
    return GradValue::tensor(next++, t, nullptr);
  }
};

GradValue tensor(Shape shape, DType dtype = DType::Float32) {
  static uint64_t next = 1;
  return GradValue::tensor(next++, TensorType{dtype, std::move(shape)}, nullptr);
}

/// An attribute lookup over `values` (by spec name), Python's defaults for the rest.
GradAttrLookup attrs(std::map<std::string, GradValue> values) {
  return [values](const AttrSpec &spec) {
    auto it = values.find(spec.name);
    if (it != values.end()) return it->second;
    return GradValue::num(0, false); // keepdims=false, diagonal=0
  };
}

} // namespace

TEST(Autograd, BroadcastOperandsGetGradientsOfTheirOwnShape) {
  TypeEmitter e;
  GradValue x = tensor({4, 3}), y = tensor({3}), g = tensor({4, 3});
  auto grads = runDerivatives(e, OpCode::Mul, g, tensor({4, 3}), {x, y}, attrs({}), {true, true});
  ASSERT_EQ(grads.size(), 2u);
  EXPECT_EQ(grads[0].shape(), (Shape{4, 3}));
  EXPECT_EQ(grads[1].shape(), (Shape{3}));
  // d/dy = unbroadcast(g * x, y): the product, summed over the added axis, reshaped.
  EXPECT_EQ(e.log, (std::vector<std::string>{"mul float32[4, 3]", "mul float32[4, 3]", "sum float32[1, 3]",
                                             "reshape float32[3]"}));
}

TEST(Autograd, OperandsThatNeedNoGradientEmitNothing) {
  TypeEmitter e;
  GradValue x = tensor({2, 3}), w = tensor({3, 5});
  auto grads = runDerivatives(e, OpCode::Matmul, tensor({2, 5}), tensor({2, 5}), {x, w}, attrs({}), {false, true});
  EXPECT_EQ(grads[0].kind, GradValue::Kind::None);
  EXPECT_EQ(grads[1].shape(), (Shape{3, 5}));
  EXPECT_EQ(e.log, (std::vector<std::string>{"transpose float32[3, 2]", "matmul float32[3, 5]"}));
}

TEST(Autograd, ASharedWeightsGradientIsOneProductOverAllRows) {
  // (8, 16, 32) @ (32, 64): rhs's gradient is one (32, 128) @ (128, 64) product.
  TypeEmitter e;
  GradValue x = tensor({8, 16, 32}), w = tensor({32, 64});
  auto grads = runDerivatives(e, OpCode::Matmul, tensor({8, 16, 64}), tensor({8, 16, 64}), {x, w}, attrs({}), {false, true});
  EXPECT_EQ(grads[1].shape(), (Shape{32, 64}));
  EXPECT_EQ(e.log, (std::vector<std::string>{"reshape float32[128, 32]", "reshape float32[128, 64]",
                                             "transpose float32[32, 128]", "matmul float32[32, 64]"}));
}

TEST(Autograd, ReductionsBroadcastTheGradientBack) {
  TypeEmitter e;
  GradValue x = tensor({4, 5}, DType::Float64);
  auto grads = runDerivatives(e, OpCode::Mean, tensor({4}, DType::Float64), tensor({4}, DType::Float64), {x},
                              attrs({{"axes", GradValue::list({1})}}), {true});
  EXPECT_EQ(grads[0].shape(), (Shape{4, 5}));
  EXPECT_EQ(grads[0].type.dtype, DType::Float64);
  // The division by the count (a float constant) stays float64.
  for (const std::string &line : e.log) EXPECT_NE(line.find("float64"), std::string::npos) << line;
}

TEST(Autograd, ExtremaShareTheGradientBetweenTies) {
  TypeEmitter e;
  GradValue x = tensor({3, 4});
  auto grads = runDerivatives(e, OpCode::Max, tensor({3, 1}), tensor({3, 1}), {x},
                              attrs({{"axes", GradValue::list({1})}, {"keepdims", GradValue::num(1, false)}}), {true});
  EXPECT_EQ(grads[0].shape(), (Shape{3, 4}));
  EXPECT_EQ(e.log, (std::vector<std::string>{"eq bool[3, 4]", "cast float32[3, 4]", "sum float32[3, 1]",
                                             "div float32[3, 4]", "broadcast_to float32[3, 4]", "mul float32[3, 4]"}));
}

TEST(Autograd, ConcatSplitsItsGradientOnePiecePerOperand) {
  TypeEmitter e;
  GradValue a = tensor({2, 3}), b = tensor({2, 5});
  auto grads = runDerivatives(e, OpCode::Concat, tensor({2, 8}), tensor({2, 8}), {a, b},
                              attrs({{"axis", GradValue::num(1, false)}}), {true, true});
  ASSERT_EQ(grads.size(), 2u);
  EXPECT_EQ(grads[0].shape(), (Shape{2, 3}));
  EXPECT_EQ(grads[1].shape(), (Shape{2, 5}));
}

TEST(Autograd, SliceGradientsStayLazy) {
  TypeEmitter e;
  GradValue x = tensor({10, 4});
  auto grads = runDerivatives(e, OpCode::Slice, tensor({3, 4}), tensor({3, 4}), {x},
                              attrs({{"starts", GradValue::list({2, 0})}, {"steps", GradValue::list({2, 1})},
                                     {"shape", GradValue::list({3, 4})}}),
                              {true});
  ASSERT_EQ(grads[0].kind, GradValue::Kind::SliceGrad);
  EXPECT_EQ(grads[0].type.shape, (Shape{10, 4}));
  EXPECT_EQ(grads[0].ints, (std::vector<int64_t>{2, 0}));
  EXPECT_EQ(grads[0].steps, (std::vector<int64_t>{2, 1}));
  EXPECT_TRUE(e.log.empty()); // nothing emitted until the backward pass joins the pieces
}

TEST(Autograd, TransposeUsesTheInversePermutation) {
  TypeEmitter e;
  GradValue x = tensor({2, 3, 4});
  auto grads = runDerivatives(e, OpCode::Transpose, tensor({4, 2, 3}), tensor({4, 2, 3}), {x},
                              attrs({{"perm", GradValue::list({2, 0, 1})}}), {true});
  EXPECT_EQ(grads[0].shape(), (Shape{2, 3, 4}));
}

TEST(Autograd, EveryFormulaRunsOnAnElementwiseOp) {
  // Every unary and binary op with formulas, on float32 (2, 3) tensors: each gradient has its
  // operand's shape and dtype, so no formula emits an op the op table refuses.
  int checked = 0;
  for (int i = 0; i < int(OpCode::NumOps); ++i) {
    OpCode code = OpCode(i);
    if (!hasDerivatives(code) || !isElementwise(code) || code == OpCode::Where) continue;
    const OpInfo &info = opInfo(code);
    std::vector<GradValue> inputs(info.arity == 2 ? 2 : 1, tensor({2, 3}));
    TypeEmitter e;
    std::vector<GradValue> grads;
    ASSERT_NO_THROW(grads = runDerivatives(e, code, tensor({2, 3}), tensor({2, 3}), inputs, attrs({}),
                                           std::vector<bool>(inputs.size(), true)))
        << info.mnemonic;
    for (const GradValue &g : grads) {
      if (g.kind == GradValue::Kind::None) continue;
      EXPECT_EQ(g.shape(), (Shape{2, 3})) << info.mnemonic;
      EXPECT_EQ(g.type.dtype, DType::Float32) << info.mnemonic;
    }
    ++checked;
  }
  EXPECT_GT(checked, 20);
}

TEST(Autograd, AnOpWithoutFormulasIsRefused) {
  TypeEmitter e;
  EXPECT_FALSE(hasDerivatives(OpCode::Argmax));
  EXPECT_THROW(runDerivatives(e, OpCode::Argmax, tensor({2}), tensor({}), {tensor({2})}, attrs({}), {true}),
               std::invalid_argument);
}

TEST(Autograd, AnAttributeLeftOutReadsAsItsSpecDefault) {
  // The backward formulas read a recorded op's attributes from OpAttrs; one the op was recorded
  // without holds OpAttrs' default, which must be the spec's.
  int checked = 0;
  for (int i = 0; i < int(OpCode::NumOps); ++i)
    for (const AttrSpec &spec : opInfo(OpCode(i)).attrs) {
      std::string d = spec.defaultValue;
      if (d.empty() || spec.place == AttrPlace::MlirOnly) continue;
      OpAttrs none;
      if (spec.type == AttrType::F64) EXPECT_EQ(none.value, std::strtod(d.c_str(), nullptr)) << spec.name;
      else if (spec.type == AttrType::I64Array || spec.type == AttrType::Shape) EXPECT_TRUE(getInts(none, spec).empty()) << spec.name;
      else if (spec.type == AttrType::Reduce) EXPECT_EQ(getInt(none, spec), d == "sum" ? 0 : d == "max" ? 1 : 2) << spec.name;
      else if (d == "true" || d == "false") EXPECT_EQ(getInt(none, spec), d == "true") << spec.name;
      else EXPECT_EQ(getInt(none, spec), std::strtoll(d.c_str(), nullptr, 10)) << opInfo(OpCode(i)).mnemonic << "." << spec.name;
      ++checked;
    }
  EXPECT_GT(checked, 5);
}
