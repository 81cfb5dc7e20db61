// The `gt` dialect: registration of its ops and attributes; #gt.sharding's syntax.
#include "gt/Dialect/GTDialect.h"
#include "gt/Dialect/GTOps.h"

#include "mlir/IR/DialectImplementation.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace mlir::gt;

#include "gt/Dialect/GTOpsDialect.cpp.inc"

#define GET_ATTRDEF_CLASSES
#include "gt/Dialect/GTAttrs.cpp.inc"

void GTDialect::initialize() {
  addOperations<
#define GET_OP_LIST
#include "gt/Dialect/GTOps.cpp.inc"
      >();
  addAttributes<
#define GET_ATTRDEF_LIST
#include "gt/Dialect/GTAttrs.cpp.inc"
      >();
}

::gt::Sharding ShardingAttr::toCore() const {
  ::gt::Sharding s;
  s.kind = getKind();
  s.axis = getAxis();
  s.reduce = getReduce();
  s.workers.assign(getWorkers().begin(), getWorkers().end());
  return s;
}

ShardingAttr ShardingAttr::fromCore(MLIRContext *ctx, const ::gt::Sharding &s) {
  return get(ctx, s.kind, s.isSplit() ? s.axis : 0, s.isPartial() ? s.reduce : ::gt::ReduceKind::Sum, s.workers);
}

// #gt.sharding<replicated over [0]>, <split(1) over [0, 1]>, <partial(sum) over [2, 3]>
Attribute ShardingAttr::parse(AsmParser &p, Type) {
  StringRef kindName;
  if (p.parseLess() || p.parseKeyword(&kindName)) return {};
  ::gt::ShardKind kind;
  int64_t axis = 0;
  ::gt::ReduceKind reduce = ::gt::ReduceKind::Sum;
  if (kindName == "replicated") {
    kind = ::gt::ShardKind::Replicated;
  } else if (kindName == "split") {
    kind = ::gt::ShardKind::Split;
    if (p.parseLParen() || p.parseInteger(axis) || p.parseRParen()) return {};
  } else if (kindName == "partial") {
    kind = ::gt::ShardKind::Partial;
    StringRef r;
    if (p.parseLParen() || p.parseKeyword(&r) || p.parseRParen()) return {};
    if (r == "sum") reduce = ::gt::ReduceKind::Sum;
    else if (r == "max") reduce = ::gt::ReduceKind::Max;
    else if (r == "min") reduce = ::gt::ReduceKind::Min;
    else return p.emitError(p.getCurrentLocation(), "expected sum, max or min"), Attribute();
  } else {
    p.emitError(p.getCurrentLocation(), "expected replicated, split(axis) or partial(sum|max|min)");
    return {};
  }
  SmallVector<int64_t> workers;
  if (p.parseKeyword("over") ||
      p.parseCommaSeparatedList(AsmParser::Delimiter::Square, [&] {
        int64_t w;
        if (p.parseInteger(w)) return failure();
        workers.push_back(w);
        return success();
      }) ||
      p.parseGreater())
    return {};
  if (workers.empty()) return p.emitError(p.getCurrentLocation(), "a sharding needs at least one worker"), Attribute();
  return ShardingAttr::get(p.getContext(), kind, axis, reduce, workers);
}

void ShardingAttr::print(AsmPrinter &p) const {
  std::string s = toCore().str(); // "split(0) over [0, 1]"
  p << "<" << s << ">";
}
