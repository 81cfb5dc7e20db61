// The derivative table: every op's gradient formulas as data (generated from the `grad:`
// entries of ops/*.yaml by ops/generate.py into Derivatives.inc).
//
// A formula is a list of steps in evaluation order; each step names earlier steps as its
// arguments, and the last step is the gradient of one operand. The client core runs them
// (gt/Client/Autograd.h) for the autograd's backward pass.
#pragma once

#include "gt/Core/OpTable.h"

#include <span>

namespace gt {

enum class StepKind : uint8_t {
  Input,  ///< operand args[0] of the forward op (`name` is its name in the spec)
  Grad,   ///< the gradient flowing into the forward op's result (`g`)
  Result, ///< the forward op's result (`result`)
  Attr,   ///< the forward op's attribute `name`
  Const,  ///< the number `name` (a 0-d tensor of the gradient's dtype where a tensor is needed)
  Shape,  ///< the shape of step args[0] (`x.shape`)
  List,   ///< a list of the values of steps args (an axis list: `[axis]`)
  Op,     ///< the op `name` applied to steps args, with attributes from the `keywords` steps
  Helper, ///< the helper function `name` (see derivativeHelpers) applied to steps args
};

struct DerivativeStep {
  StepKind kind;
  const char *name;
  int8_t numArgs;
  int16_t args[6];
  int8_t numKeywords;
  struct Keyword {
    const char *name; ///< an attribute the op declares
    int16_t step;
  } keywords[6];
};

/// d(op) / d(operand `operand`) = `formula`, as `steps`.
struct Derivative {
  OpCode op;
  int operand;          ///< the operand's index (the variadic operand of concat: 0, one gradient per tensor)
  const char *formula;  ///< the spec's text, for messages
  std::span<const DerivativeStep> steps;
};

/// A function formulas may call besides ops.
struct DerivativeHelper {
  const char *name;
  const char *args;    ///< "g, x"
  const char *returns; ///< what it computes
};

/// Every formula of the spec, in op order.
std::span<const Derivative> derivatives();
/// The helpers the formulas may call (unbroadcast, expand_reduced, ...).
std::span<const DerivativeHelper> derivativeHelpers();

} // namespace gt
