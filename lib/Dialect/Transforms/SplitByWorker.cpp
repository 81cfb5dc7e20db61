// gt-split-by-worker: the dispatcher's global view (logical shapes, #gt.sharding layouts) ->
// one function per worker holding the ops it runs on the shapes it holds.
#include "Sharding.h"

#include "gt/Dialect/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"

#include <map>

namespace mlir::gt {
#define GEN_PASS_DEF_GTSPLITBYWORKER
#include "gt/Dialect/Passes.h.inc"

namespace {
namespace core = ::gt;
using core::OpCode;
using core::Sharding;
constexpr const char *kReplicaOfAttr = "gt.replica_of";

class Splitter {
public:
  Splitter(func::FuncOp func, int64_t defaultWorker) : func_(func), defaultWorker_(defaultWorker) {}

  LogicalResult run() {
    // Arguments: each worker of a value's group gets it, with its local type.
    for (BlockArgument arg : func_.getArguments()) {
      Sharding s = layout(arg);
      for (int64_t w : s.workers) {
        Block &body = workerFunc(w);
        Value local = body.addArgument(localType(arg, s, w), arg.getLoc());
        argAttrs_[w].push_back(func_.getArgAttrDict(arg.getArgNumber()));
        map_[w].map(arg, local);
      }
    }
    for (Operation &op : llvm::make_early_inc_range(func_.getBody().front())) {
      if (isa<func::ReturnOp>(op)) continue;
      if (failed(split(&op))) return failure();
    }
    finish();
    return success();
  }

private:
  Sharding layout(Value v) {
    if (auto s = recordedSharding(v)) return *s;
    return Sharding::replicated({recordedWorker(v).value_or(defaultWorker_)});
  }

  RankedTensorType localType(Value v, const Sharding &s, int64_t worker) {
    auto t = cast<RankedTensorType>(v.getType());
    core::Shape shape = core::localShape(core::Shape(t.getShape().begin(), t.getShape().end()), s, worker);
    return RankedTensorType::get(shape, t.getElementType());
  }

  Block &workerFunc(int64_t w) {
    auto it = funcs_.find(w);
    if (it != funcs_.end()) return it->second.getBody().front();
    OpBuilder b(func_);
    auto f = b.create<func::FuncOp>(func_.getLoc(), "worker" + std::to_string(w), b.getFunctionType({}, {}));
    f->setAttr("gt.worker", b.getI64IntegerAttr(w));
    Block *body = f.addEntryBlock();
    OpBuilder::atBlockEnd(body).create<func::ReturnOp>(func_.getLoc());
    funcs_.emplace(w, f);
    return *body;
  }

  OpBuilder builderFor(int64_t w) {
    Block &body = workerFunc(w);
    return OpBuilder(body.getTerminator());
  }

  /// Clones `op` for worker `w` with local operands and result type `resultType`.
  Operation *cloneFor(Operation *op, int64_t w, Type resultType) {
    OpBuilder b = builderFor(w);
    Operation *clone = b.clone(*op, map_[w]);
    if (clone->getNumResults() == 1 && resultType) clone->getResult(0).setType(resultType);
    return clone;
  }

  LogicalResult split(Operation *op) {
    const core::OpInfo *info = opInfoOf(op);
    if (!info) return op->emitError("gt-split-by-worker: not a gt op");
    if (info->code == OpCode::Free || info->code == OpCode::Send) {
      Sharding s = layout(op->getOperand(0));
      for (int64_t w : s.workers) cloneFor(op, w, Type());
      if (info->code == OpCode::Free)
        for (auto [w, copy] : replicas_.lookup(op->getOperand(0))) { // copies this batch made
          OpBuilder b = builderFor(w);
          IRMapping m;
          m.map(op->getOperand(0), copy);
          b.clone(*op, m);
        }
      return success();
    }
    Value result = op->getResult(0);
    Sharding out = layout(result);
    if (info->code == OpCode::Move) return splitMove(op, out);
    for (int64_t w : out.workers) {
      Type local = localType(result, out, w);
      if ((info->code == OpCode::Randn || info->code == OpCode::Rand) && out.isSplit()) {
        // Each worker draws the whole tensor and keeps its block: element i is a function of
        // (seed, i), so the blocks are those of the unsharded tensor.
        Operation *whole = cloneFor(op, w, result.getType());
        OpBuilder b = builderFor(w);
        core::OpAttrs attrs;
        attrs.workers = out.workers;
        attrs.axes = {out.axis};
        Value block = emit(b, op->getLoc(), OpCode::AllSlice, whole->getResult(0), attrs, local, op);
        moveIdentity(whole, block.getDefiningOp());
        map_[w].map(result, block);
        continue;
      }
      Operation *clone = cloneFor(op, w, local);
      if (info->code == OpCode::Mean && out.isPartial()) {
        // The mean over a split axis: each worker's mean, weighted by its share of the rows.
        Sharding in = layout(op->getOperand(0));
        auto inType = cast<RankedTensorType>(op->getOperand(0).getType());
        int64_t size = inType.getDimSize(in.axis);
        auto [begin, end] = core::splitRange(size, int64_t(in.workers.size()), in.rankOf(w));
        OpBuilder b = builderFor(w);
        core::OpAttrs fill;
        fill.value = size == 0 ? 0.0 : double(end - begin) / double(size);
        auto elem = cast<RankedTensorType>(local).getElementType();
        Value scale = emit(b, op->getLoc(), OpCode::Full, ValueRange(), fill, RankedTensorType::get({}, elem), op);
        Value scaled = emit(b, op->getLoc(), OpCode::Mul, ValueRange{clone->getResult(0), scale}, {}, local, op);
        moveIdentity(clone, scaled.getDefiningOp()); // the scaled mean is the value the client named
        map_[w].map(result, scaled);
        continue;
      }
      map_[w].map(result, clone->getResult(0));
    }
    return success();
  }

  /// gt.move: rank r of `to` gets rank r (mod |from|) of `from`'s value: a send/recv pair, or
  /// nothing when it is the same worker. A replicated value moving to a split layout is a
  /// scatter: the sender cuts rank r's block first (gt.slice), a worker already holding the
  /// value keeps its block (gt.all_slice).
  LogicalResult splitMove(Operation *op, const Sharding &out) {
    auto move = cast<MoveOp>(op);
    ArrayRef<int64_t> from = move.getFrom(), to = move.getTo();
    Sharding in = layout(op->getOperand(0));
    bool scatter = !in.isSplit() && out.isSplit();
    auto whole = cast<RankedTensorType>(op->getOperand(0).getType());
    for (size_t r = 0; r < to.size(); ++r) {
      int64_t dst = to[r], src = from[r % from.size()];
      if (!in.isSplit() && llvm::is_contained(from, dst)) src = dst; // it already holds the value
      Type local = localType(op->getResult(0), out, dst);
      Value srcValue = map_[src].lookup(op->getOperand(0));
      if (scatter) {
        OpBuilder sb = builderFor(src);
        core::OpAttrs block;
        if (src == dst) {
          block.workers = out.workers;
          block.axes = {out.axis};
          map_[dst].map(op->getResult(0), emit(sb, op->getLoc(), OpCode::AllSlice, srcValue, block, local, op));
          continue;
        }
        block.shape = core::Shape(cast<RankedTensorType>(local).getShape());
        block.starts.assign(block.shape.size(), 0);
        block.steps.assign(block.shape.size(), 1);
        block.starts[size_t(out.axis)] = core::splitRange(whole.getDimSize(out.axis), int64_t(to.size()), int64_t(r)).first;
        srcValue = emit(sb, op->getLoc(), OpCode::Slice, srcValue, block, local, op);
      } else if (localType(op->getOperand(0), in, src) != local) {
        return op->emitError("gt-split-by-worker: a move between groups must keep each block's shape");
      }
      if (src == dst) {
        map_[dst].map(op->getResult(0), srcValue);
        continue;
      }
      if (Value copy = out.isSplit() ? Value() : replicaOn(op->getOperand(0), dst)) { // an earlier move brought it
        map_[dst].map(op->getResult(0), copy);
        continue;
      }
      OpBuilder sb = builderFor(src);
      core::OpAttrs peer;
      peer.workers = {dst};
      emit(sb, op->getLoc(), OpCode::Send, srcValue, peer, Type(), op);
      OpBuilder rb = builderFor(dst);
      peer.workers = {src};
      Value copy = emit(rb, op->getLoc(), OpCode::Recv, {}, peer, local, op);
      map_[dst].map(op->getResult(0), copy);
      keepAsReplica(op->getOperand(0), in, out, dst, copy);
    }
    return success();
  }

  /// The copy of `moved` that an earlier move of this batch left on `worker` (null if none).
  Value replicaOn(Value moved, int64_t worker) {
    for (auto [w, copy] : replicas_.lookup(moved))
      if (w == worker) return copy;
    return Value();
  }

  /// A whole copy of a client's tensor (one with a `gt.id`: a function argument, a tensor of an
  /// earlier batch, or made by this one) received by `dst` is kept there as another replica of
  /// it (`gt.replica_of` = its id): tensors never change, so later uses, in this batch or
  /// later ones, need not move it again. It is freed with the tensor (see split), not after
  /// its last use here.
  void keepAsReplica(Value moved, const Sharding &in, const Sharding &out, int64_t dst, Value copy) {
    if (!in.isReplicated() || out.isSplit()) return;
    IntegerAttr id;
    if (auto arg = dyn_cast<BlockArgument>(moved))
      id = func_.getArgAttrOfType<IntegerAttr>(arg.getArgNumber(), "gt.id");
    else
      id = moved.getDefiningOp()->getAttrOfType<IntegerAttr>("gt.id");
    if (!id) return;
    copy.getDefiningOp()->setAttr(kReplicaOfAttr, id);
    replicas_[moved].push_back({dst, copy});
  }

  /// The client's id and the global layout name `to`'s result from now on, not `from`'s.
  void moveIdentity(Operation *from, Operation *to) {
    for (const char *name : {"gt.id", kShardingAttr})
      if (Attribute a = from->getAttr(name)) {
        to->setAttr(name, a);
        from->removeAttr(name);
      }
  }

  /// A new op for `code` carrying `cause`'s signal; its result (null without one).
  Value emit(OpBuilder &b, Location loc, OpCode code, ValueRange operands, const core::OpAttrs &attrs, Type type,
             Operation *cause) {
    Operation *op = createOp(b, loc, code, operands, attrs, type);
    for (const char *name : {kSignalAttr, kCompileAttr})
      if (Attribute a = cause->getAttr(name)) op->setAttr(name, a);
    return op->getNumResults() ? op->getResult(0) : Value();
  }

  void finish() {
    for (auto &[w, f] : funcs_) {
      Block &body = f.getBody().front();
      f.setFunctionType(FunctionType::get(f.getContext(), body.getArgumentTypes(), {}));
      // One call: per-argument setArgAttrs rebuilds (and the context keeps) the whole array
      // each time, O(n^2) bytes for n arguments (gt::dispatcher::captureBatch has the story).
      SmallVector<DictionaryAttr> attrs(argAttrs_[w].begin(), argAttrs_[w].end());
      for (DictionaryAttr &a : attrs)
        if (!a) a = DictionaryAttr::get(f.getContext());
      f.setAllArgAttrs(attrs);
      freeTemporaries(body);
    }
    func_.erase();
  }

  /// Values the sharding passes added (no `gt.id`: the client never names them, e.g. collective
  /// results, received blocks, a whole random tensor before its slice) are freed right after
  /// their last use on each worker: they do not pile up until the end of the step, and
  /// gt-mark-hot-regions can keep them inside a fused region.
  static void freeTemporaries(Block &body) {
    SmallVector<Operation *> ops = llvm::map_to_vector(body.without_terminator(), [](Operation &op) { return &op; });
    for (Operation *op : ops) {
      if (op->getNumResults() != 1 || op->hasAttr("gt.id") || op->hasAttr(kReplicaOfAttr)) continue;
      Value v = op->getResult(0);
      if (llvm::any_of(v.getUsers(), [](Operation *user) { return isa<FreeOp>(user); })) continue;
      Operation *last = op;
      for (Operation *user : v.getUsers())
        if (last->isBeforeInBlock(user)) last = user;
      OpBuilder b(last->getContext());
      b.setInsertionPointAfter(last);
      b.create<FreeOp>(op->getLoc(), v);
    }
  }

  func::FuncOp func_;
  int64_t defaultWorker_;
  std::map<int64_t, func::FuncOp> funcs_;
  std::map<int64_t, IRMapping> map_;
  std::map<int64_t, std::vector<DictionaryAttr>> argAttrs_;
  llvm::DenseMap<Value, SmallVector<std::pair<int64_t, Value>>> replicas_; ///< client tensor -> (worker, copy kept there)
};

struct GTSplitByWorkerPass : impl::GTSplitByWorkerBase<GTSplitByWorkerPass> {
  using GTSplitByWorkerBase::GTSplitByWorkerBase;
  void runOnOperation() override {
    SmallVector<func::FuncOp> funcs(getOperation().getOps<func::FuncOp>());
    for (func::FuncOp f : funcs)
      if (failed(Splitter(f, defaultWorker).run())) return signalPassFailure();
  }
};
} // namespace
} // namespace mlir::gt
