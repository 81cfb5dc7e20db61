// Typed attributes: one struct per op, generated from its spec (ops/*.yaml, by ops/generate.py),
// with the fields the spec declares under their own names and C++ types:
//
//   auto [axis] = gt::attrs::Cumsum::of(inst.attrs);            // not inst.attrs.axes[0]
//   gt::attrs::Transpose::of(inst.attrs).perm                    // not inst.attrs.axes
//
// OpAttrs stays the storage that the wire, the plan and kernel keys and the MLIR and Python
// conversions read through the op table's declarations (OpTable.h); these structs are how code
// that handles one op reads and writes it. `of` throws std::out_of_range when an element of a
// list slot is missing, as `attrs.axes.at(0)` did.
#pragma once

#include "gt/Core/OpTable.h"
#include "gt/Core/Sharding.h"

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

namespace gt::attrs {

/// values[i]; std::out_of_range naming `what` ("cumsum.axis") when the list is shorter (a
/// malformed instruction: the dispatcher's checks or the shape rules refuse it first).
inline int64_t element(const std::vector<int64_t> &values, int i, const char *what) {
  if (size_t(i) >= values.size()) throw std::out_of_range(std::string("the attribute ") + what + " is missing");
  return values[size_t(i)];
}
/// values[i] = v, growing the list with zeros as needed.
inline void setElement(std::vector<int64_t> &values, int i, int64_t v) {
  if (values.size() <= size_t(i)) values.resize(size_t(i) + 1);
  values[size_t(i)] = v;
}

#include "gt/Core/OpAttrStructs.inc"

} // namespace gt::attrs
