// The dialect defines exactly the ops of the op table (the spec, ops/*.yaml), plus
// gt.region / gt.yield.
#include "gt/Dialect/GTOps.h"
#include "gt/Dialect/Passes.h"

#include "mlir/IR/MLIRContext.h"

#include <gtest/gtest.h>

TEST(Dialect, OpsMatchOpTable) {
  mlir::MLIRContext ctx;
  ctx.loadDialect<mlir::gt::GTDialect>();
  std::set<std::string> dialectOps;
  for (mlir::RegisteredOperationName name : ctx.getRegisteredOperations())
    if (name.getDialectNamespace() == "gt") dialectOps.insert(name.stripDialect().str());
  // Structure, not instructions: the only ops outside the op table.
  EXPECT_EQ(dialectOps.erase("region"), 1u);
  EXPECT_EQ(dialectOps.erase("yield"), 1u);
  std::set<std::string> tableOps;
  for (int i = 0; i < int(gt::OpCode::NumOps); ++i) tableOps.insert(gt::opInfo(gt::OpCode(i)).mnemonic);
  EXPECT_EQ(dialectOps, tableOps);
}

// Every compute op of the spec has a conversion pattern in gt-lower-to-linalg (else the pass fails
// on it by name when a worker first compiles it); upload, free and the distribution ops stay.
TEST(Dialect, EveryComputeOpHasALowering) {
  for (int i = 0; i < int(gt::OpCode::NumOps); ++i) {
    const gt::OpInfo &info = gt::opInfo(gt::OpCode(i));
    bool stays = info.code == gt::OpCode::Upload || info.kind == gt::OpKind::Lifetime ||
                 info.kind == gt::OpKind::Distribution;
    EXPECT_EQ(mlir::gt::linalgLoweringOf(info.code),
              stays ? mlir::gt::LinalgLowering::Stays : mlir::gt::LinalgLowering::Converted)
        << "gt." << info.mnemonic << " (lib/Dialect/Transforms/LowerToLinalg.cpp, kOpLowerings)";
  }
}
