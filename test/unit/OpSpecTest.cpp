// The generated op table and derivative table (ops/*.yaml -> ops/generate.py) against the
// code that reads them: plan keys, attribute storage and the derivative steps.
#include "gt/Core/Derivatives.h"
#include "gt/Core/OpAttrStructs.h"
#include "gt/Core/OpTable.h"

#include <gtest/gtest.h>

#include <set>

using namespace gt;

namespace {

/// Attributes with every declared slot filled with a distinct, plausible value.
OpAttrs sampleAttrs(OpCode code) {
  OpAttrs a;
  for (const AttrSpec &spec : opInfo(code).attrs) {
    if (spec.place == AttrPlace::MlirOnly) continue;
    switch (spec.type) {
    case AttrType::I64Array: case AttrType::Shape: setInts(a, spec, {2, 3}); break;
    case AttrType::F64: a.value = 1.5; break;
    case AttrType::Bool: setInt(a, spec, 0); break;
    case AttrType::DType: setInt(a, spec, int64_t(DType::Float32)); break;
    case AttrType::Reduce: setInt(a, spec, 0); break;
    case AttrType::I64: setInt(a, spec, 1); break;
    }
  }
  return a;
}

/// `a` with the attribute `spec` changed to another valid value.
OpAttrs perturbed(OpAttrs a, const AttrSpec &spec) {
  switch (spec.type) {
  case AttrType::I64Array: case AttrType::Shape: {
    std::vector<int64_t> v = getInts(a, spec);
    v.back() += 1;
    setInts(a, spec, v);
    break;
  }
  case AttrType::F64: a.value += 1; break;
  case AttrType::Bool: setInt(a, spec, !getInt(a, spec)); break;
  case AttrType::DType: setInt(a, spec, int64_t(DType::Float64)); break;
  case AttrType::Reduce: setInt(a, spec, 1); break;
  case AttrType::I64: setInt(a, spec, getInt(a, spec) + 1); break;
  }
  return a;
}

std::string planKey(OpCode code, const OpAttrs &a) {
  std::string key;
  appendAttrsKey(code, a, key);
  return key;
}

} // namespace

TEST(OpSpec, EveryDeclaredAttributeIsInThePlanKey) {
  // Two instructions of one op that differ in one declared attribute never share a plan key
  // (a field left out would give a silent wrong cache hit); runtime attributes (fill values,
  // seeds, which each batch brings) never change it.
  int checked = 0;
  for (int i = 0; i < int(OpCode::NumOps); ++i) {
    OpCode code = OpCode(i);
    OpAttrs base = sampleAttrs(code);
    for (const AttrSpec &spec : opInfo(code).attrs) {
      if (spec.place == AttrPlace::MlirOnly) continue;
      OpAttrs other = perturbed(base, spec);
      if (spec.runtime)
        EXPECT_EQ(planKey(code, base), planKey(code, other)) << opInfo(code).mnemonic << "." << spec.name;
      else
        EXPECT_NE(planKey(code, base), planKey(code, other)) << opInfo(code).mnemonic << "." << spec.name;
      ++checked;
    }
  }
  EXPECT_GT(checked, 40);
}

TEST(OpSpec, AttributesThatShapeCodeAreInTheKernelKey) {
  for (int i = 0; i < int(OpCode::NumOps); ++i) {
    OpCode code = OpCode(i);
    OpAttrs base = sampleAttrs(code);
    for (const AttrSpec &spec : opInfo(code).attrs)
      if (spec.place == AttrPlace::Attribute && !spec.runtime)
        EXPECT_NE(attrsKey(code, base), attrsKey(code, perturbed(base, spec)))
            << opInfo(code).mnemonic << "." << spec.name;
  }
}

TEST(OpSpec, ClearUndeclaredKeepsOnlyWhatTheOpDeclares) {
  OpAttrs a;
  a.shape = {4, 4};
  a.axes = {1, 0, 7};
  a.starts = {1};
  a.keepdims = true;
  a.count = 9;
  a.workers = {3};
  clearUndeclared(OpCode::IndexSelect, a); // declares only axis = axes[0]
  EXPECT_EQ(a.axes, std::vector<int64_t>{1});
  EXPECT_TRUE(a.shape.empty() && a.starts.empty() && a.workers.empty());
  EXPECT_FALSE(a.keepdims);
  EXPECT_EQ(a.count, 0);
  OpAttrs s;
  s.axes = {2};
  s.keepdims = true;
  s.count = 5;
  clearUndeclared(OpCode::Sum, s);
  EXPECT_EQ(s.axes, std::vector<int64_t>{2});
  EXPECT_TRUE(s.keepdims);
  EXPECT_EQ(s.count, 0);
}

TEST(OpSpec, TypedAccessGoesThroughTheDeclaredSlot) {
  const AttrSpec *split = findAttr(OpCode::AllToAll, "split_axis");
  const AttrSpec *concat = findAttr(OpCode::AllToAll, "concat_axis");
  ASSERT_TRUE(split && concat);
  OpAttrs a;
  setInt(a, *concat, 0);
  setInt(a, *split, 1);
  EXPECT_EQ(a.axes, (std::vector<int64_t>{1, 0}));
  EXPECT_EQ(findAttr(OpCode::Transpose, "axes"), nullptr); // transpose calls it perm
  ASSERT_NE(findAttr(OpCode::Transpose, "perm"), nullptr);
  EXPECT_THROW(setInt(a, *findAttr(OpCode::Cast, "dtype"), 99), DTypeError);
}

TEST(OpSpec, DerivativeStepsReferToOpsHelpersAndEarlierSteps) {
  std::set<std::string> helpers;
  for (const DerivativeHelper &h : derivativeHelpers()) helpers.insert(h.name);
  std::set<std::pair<int, int>> covered;
  for (const Derivative &d : derivatives()) {
    const OpInfo &forward = opInfo(d.op);
    EXPECT_TRUE(forward.differentiable) << forward.mnemonic;
    ASSERT_FALSE(d.steps.empty()) << d.formula;
    covered.insert({int(d.op), d.operand});
    for (size_t i = 0; i < d.steps.size(); ++i) {
      const DerivativeStep &s = d.steps[i];
      for (int k = 0; k < s.numArgs; ++k)
        if (s.kind != StepKind::Input) EXPECT_LT(size_t(s.args[k]), i) << d.formula;
      for (int k = 0; k < s.numKeywords; ++k) EXPECT_LT(size_t(s.keywords[k].step), i) << d.formula;
      if (s.kind == StepKind::Op) {
        const OpInfo *callee = lookupOp(s.name);
        ASSERT_NE(callee, nullptr) << s.name << " in " << d.formula;
        for (int k = 0; k < s.numKeywords; ++k)
          EXPECT_NE(findAttr(callee->code, s.keywords[k].name), nullptr) << s.keywords[k].name << " in " << d.formula;
      }
      if (s.kind == StepKind::Helper) EXPECT_TRUE(helpers.count(s.name)) << s.name << " in " << d.formula;
      if (s.kind == StepKind::Attr) EXPECT_NE(findAttr(d.op, s.name), nullptr) << s.name << " in " << d.formula;
    }
  }
  // Every float op the autograd needs has its formula: a spot check of the table's reach.
  for (OpCode code : {OpCode::Exp, OpCode::Matmul, OpCode::Sum, OpCode::Slice, OpCode::IndexSelect})
    EXPECT_TRUE(covered.count({int(code), 0})) << opInfo(code).mnemonic;
  EXPECT_TRUE(covered.count({int(OpCode::Where), 1}) && covered.count({int(OpCode::Where), 2}));
  EXPECT_FALSE(covered.count({int(OpCode::Where), 0})); // the condition has no gradient
}

// The typed attribute structs (gt/Core/OpAttrStructs.h, generated from the same spec): every
// op's struct reads each declared attribute from its slot and writes it back there, and nothing
// else; the fields have the spec's names and types.
TEST(OpSpec, TypedAttributeStructsRoundTripEveryDeclaredAttribute) {
  int checked = 0;
  for (int i = 0; i < int(OpCode::NumOps); ++i) {
    OpCode code = OpCode(i);
    OpAttrs base = sampleAttrs(code);
    for (const AttrSpec &spec : opInfo(code).attrs) {
      if (spec.place == AttrPlace::MlirOnly) continue;
      OpAttrs a = perturbed(base, spec), back = attrs::roundTrip(code, a);
      EXPECT_EQ(planKey(code, back), planKey(code, a)) << opInfo(code).mnemonic << "." << spec.name;
      EXPECT_EQ(back.value, a.value) << opInfo(code).mnemonic << "." << spec.name;
      EXPECT_EQ(back.seed, a.seed) << opInfo(code).mnemonic << "." << spec.name;
      OpAttrs undeclared = a;
      clearUndeclared(code, undeclared);
      EXPECT_EQ(planKey(code, back), planKey(code, undeclared));
      ++checked;
    }
  }
  EXPECT_GT(checked, 40);
  OpAttrs a;
  a.axes = {1, 0};
  a.keepdims = true;
  EXPECT_EQ(attrs::AllToAll::of(a).splitAxis, 1);
  EXPECT_EQ(attrs::AllToAll::of(a).concatAxis, 0);
  EXPECT_EQ(attrs::Transpose::of(a).perm, (std::vector<int64_t>{1, 0}));
  EXPECT_EQ(attrs::Cumsum::of(a).axis, 1);
  EXPECT_TRUE(attrs::Sum::of(a).keepdims);
  attrs::Cumsum{2}.into(a);
  EXPECT_EQ(a.axes, (std::vector<int64_t>{2, 0})); // only its element of the slot
}
