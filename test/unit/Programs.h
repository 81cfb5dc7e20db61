// Building GT programs in C++ tests: instructions as the dispatcher would send them.
#pragma once

#include "gt/Core/Instruction.h"
#include "gt/Worker/Executor.h"

#include <cstring>
#include <vector>

namespace gt::test {

/// Uploads float32 `v` with `shape` as tensor `id`.
inline Instruction upload(uint64_t id, const std::vector<float> &v, Shape shape) {
  Instruction i;
  i.op = OpCode::Upload;
  i.result = id;
  i.attrs.shape = std::move(shape);
  i.data.assign(reinterpret_cast<const char *>(v.data()), v.size() * sizeof(float));
  return i;
}

/// `id = code(operands...)`, located at "test.py:1".
inline Instruction op(OpCode code, uint64_t id, std::vector<uint64_t> operands, OpAttrs attrs = {}) {
  Instruction i;
  i.op = code;
  i.result = id;
  i.operands = std::move(operands);
  i.attrs = std::move(attrs);
  i.location = "test.py:1";
  return i;
}

/// The float32 values of a fetched tensor.
inline std::vector<float> floats(const worker::Fetched &f) {
  std::vector<float> v(f.bytes.size() / sizeof(float));
  std::memcpy(v.data(), f.bytes.data(), f.bytes.size());
  return v;
}

} // namespace gt::test
