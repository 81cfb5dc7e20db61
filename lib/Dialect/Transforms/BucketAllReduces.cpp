// gt-bucket-all-reduces: all_reduces of one kind combined into one per bucket (see Passes.td).
#include "Sharding.h"

#include "gt/Dialect/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"

#include <map>
#include <tuple>

namespace mlir::gt {
#define GEN_PASS_DEF_GTBUCKETALLREDUCES
#include "gt/Dialect/Passes.h.inc"

namespace {
namespace core = ::gt;
using core::OpCode;
using core::Sharding;

/// What all_reduces must share to be combined: the group, the reduction, the element type and
/// the signal (which every collective carries; both compared by their uniqued pointers).
using Kind = std::tuple<std::vector<int64_t>, uint8_t, const void *, const void *>;

struct Bucket {
  SmallVector<Operation *> members; ///< in program order; the combined op goes before the first
  int64_t bytes = 0;
};

int64_t bytesOf(RankedTensorType type) {
  return type.getNumElements() * int64_t((type.getElementTypeBitWidth() + 7) / 8);
}

class Bucketer {
public:
  explicit Bucketer(int64_t limit) : limit_(limit) {}

  void run(Block &block) {
    std::map<Kind, Bucket> open;
    for (Operation &op : llvm::make_early_inc_range(block)) {
      const core::OpInfo *info = opInfoOf(&op);
      if (!info || info->code != OpCode::AllReduce) continue;
      auto type = cast<RankedTensorType>(op.getOperand(0).getType());
      std::optional<Sharding> in = recordedSharding(op.getOperand(0));
      if (!in || !in->isPartial() || type.getNumElements() == 0) continue;
      core::OpAttrs attrs = attrsOf(&op);
      Kind kind{attrs.workers, attrs.reduce, type.getElementType().getAsOpaquePointer(),
                op.getAttrOfType<StringAttr>(kSignalAttr).getAsOpaquePointer()};
      Bucket &bucket = open[kind];
      if (!bucket.members.empty() && (!definedBefore(op.getOperand(0), bucket.members.front()) ||
                                      bucket.bytes + bytesOf(type) > limit_))
        combine(std::exchange(bucket, {}));
      bucket.members.push_back(&op);
      bucket.bytes += bytesOf(type);
    }
    for (auto &[kind, bucket] : open) combine(std::move(bucket)); // each goes before its first member
  }

private:
  static bool definedBefore(Value v, Operation *op) {
    if (isa<BlockArgument>(v)) return true;
    Operation *def = v.getDefiningOp();
    return def->getBlock() == op->getBlock() && def->isBeforeInBlock(op);
  }

  /// One all_reduce for the bucket, before its first member; each member's result becomes a
  /// slice of the combined result.
  void combine(Bucket bucket) {
    if (bucket.members.size() < 2) return;
    Operation *first = bucket.members.front();
    OpBuilder b(first);
    Location loc = first->getLoc();
    StringAttr signal = first->getAttrOfType<StringAttr>(kSignalAttr);
    core::OpAttrs group = attrsOf(first);
    Sharding partial = *recordedSharding(first->getOperand(0));
    Sharding replicated = Sharding::replicated(group.workers);
    Type elem = cast<RankedTensorType>(first->getOperand(0).getType()).getElementType();
    auto vector = [&](int64_t size) { return RankedTensorType::get({size}, elem); };
    auto make = [&](OpCode code, ValueRange operands, const core::OpAttrs &attrs, Type type, const Sharding &s) {
      Operation *op = createOp(b, loc, code, operands, attrs, type);
      setSharding(op, s);
      if (signal) op->setAttr(kSignalAttr, signal);
      return op->getResult(0);
    };

    SmallVector<Value> flat;
    int64_t total = 0;
    for (Operation *m : bucket.members) {
      Value v = m->getOperand(0);
      auto type = cast<RankedTensorType>(v.getType());
      int64_t n = type.getNumElements();
      if (type.getRank() != 1) {
        core::OpAttrs reshape;
        reshape.shape = {n};
        v = make(OpCode::Reshape, v, reshape, vector(n), partial);
      }
      flat.push_back(v);
      total += n;
    }
    core::OpAttrs concat;
    concat.axes = {0};
    Value all = make(OpCode::Concat, flat, concat, vector(total), partial);
    Value reduced = make(OpCode::AllReduce, all, group, vector(total), replicated);

    int64_t offset = 0;
    for (Operation *m : bucket.members) {
      auto type = cast<RankedTensorType>(m->getResult(0).getType());
      int64_t n = type.getNumElements();
      core::OpAttrs slice;
      slice.shape = {n};
      slice.starts = {offset};
      slice.steps = {1};
      Value part = make(OpCode::Slice, reduced, slice, vector(n), replicated);
      if (type.getRank() != 1) {
        core::OpAttrs reshape;
        reshape.shape = core::Shape(type.getShape());
        part = make(OpCode::Reshape, part, reshape, type, replicated);
      }
      m->getResult(0).replaceAllUsesWith(part);
      offset += n;
    }
    for (Operation *m : bucket.members) m->erase(); // not before: `b` inserts before the first
  }

  int64_t limit_;
};

struct GTBucketAllReducesPass : impl::GTBucketAllReducesBase<GTBucketAllReducesPass> {
  using GTBucketAllReducesBase::GTBucketAllReducesBase;
  void runOnOperation() override {
    if (bucketBytes <= 0) return;
    Bucketer bucketer(bucketBytes);
    for (func::FuncOp f : getOperation().getOps<func::FuncOp>())
      for (Block &block : f.getBody()) bucketer.run(block);
  }
};
} // namespace
} // namespace mlir::gt
