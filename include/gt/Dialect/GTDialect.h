// The `gt` dialect (see GTDialect.td).
#pragma once

#include "mlir/IR/Dialect.h"

#include "gt/Dialect/GTOpsDialect.h.inc"
