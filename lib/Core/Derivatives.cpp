// The derivative table (see Derivatives.h); its contents are generated from ops/*.yaml.
#include "gt/Core/Derivatives.h"

namespace gt {

namespace {
#include "gt/Core/Derivatives.inc"
} // namespace

std::span<const Derivative> derivatives() { return kDerivatives; }
std::span<const DerivativeHelper> derivativeHelpers() { return kHelpers; }

} // namespace gt
