// The `gt` dialect: registration of its ops.
#include "gt/Dialect/GTDialect.h"
#include "gt/Dialect/GTOps.h"

using namespace mlir;
using namespace mlir::gt;

#include "gt/Dialect/GTOpsDialect.cpp.inc"

void GTDialect::initialize() {
  addOperations<
#define GET_OP_LIST
#include "gt/Dialect/GTOps.cpp.inc"
      >();
}
