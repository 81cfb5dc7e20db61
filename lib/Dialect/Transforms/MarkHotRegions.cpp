// gt-mark-hot-regions: runs of fusible ops -> gt.region, keyed by structure; repeated keys hot.
#include "gt/Dialect/GTOps.h"
#include "gt/Dialect/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/IRMapping.h"
#include "llvm/ADT/MapVector.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/Support/raw_ostream.h"
#include "llvm/Support/xxhash.h"

namespace mlir::gt {
#define GEN_PASS_DEF_GTMARKHOTREGIONS
#include "gt/Dialect/Passes.h.inc"

namespace {

/// A transpose of the last two axes read only by matmuls (and freed): a CPU worker folds it
/// into the GEMM as a transposed operand, copying nothing; inside a region it would be written
/// out transposed (strided stores: 1.7 ms for a (2048, 384) gradient in the GPT step).
bool foldsIntoMatmul(Operation *op) {
  const ::gt::OpInfo *info = opInfoOf(op);
  if (!info || info->code != ::gt::OpCode::Transpose || !::gt::swapsLastTwoAxes(attrsOf(op).axes)) return false;
  bool matmul = false;
  for (Operation *user : op->getUsers()) {
    const ::gt::OpInfo *u = opInfoOf(user);
    if (u && u->code == ::gt::OpCode::Matmul) matmul = true;
    else if (!isa<FreeOp>(user)) return false;
  }
  return matmul;
}

bool isFusibleOp(Operation *op) {
  const ::gt::OpInfo *info = opInfoOf(op);
  return info && ::gt::isFusible(info->code) && !foldsIntoMatmul(op);
}

/// A scalar's fill: a gt.full of a 0-d tensor (a number in an op, `x * 0.5`, whose value is new
/// to the session: the client makes one such tensor per value).
bool isScalarFill(Value v) {
  auto t = dyn_cast<RankedTensorType>(v.getType());
  return t && t.getRank() == 0 && isa_and_nonnull<FullOp>(v.getDefiningOp());
}

int64_t workerOf(Operation *op) {
  auto w = op->getAttrOfType<IntegerAttr>("gt.worker");
  return w ? w.getInt() : -1;
}

/// The structural key of a region body: ops, their attributes (without discardable `gt.*`
/// attributes and fill values), operand wiring, types, and what is yielded. With `sizes` false
/// it is the key of the region's *family*: tensor types keep only their rank and element type
/// and integer attributes (shapes, slice positions, axes) are left out, so the same code at
/// other sizes and offsets shares it.
uint64_t structuralKey(Block &body, bool sizes = true) {
  std::string text;
  llvm::raw_string_ostream os(text);
  auto type = [&](Type t) {
    auto tensor = dyn_cast<RankedTensorType>(t);
    if (sizes || !tensor)
      os << t;
    else
      os << "rank" << tensor.getRank() << "x" << tensor.getElementType();
  };
  llvm::DenseMap<Value, unsigned> number;
  for (BlockArgument arg : body.getArguments()) {
    number[arg] = number.size();
    os << "arg ";
    type(arg.getType());
    os << ";";
  }
  for (Operation &op : body) {
    os << op.getName() << "(";
    for (Value v : op.getOperands()) os << number.lookup(v) << ",";
    os << ")";
    for (NamedAttribute a : op.getAttrs()) {
      StringRef name = a.getName().strref();
      if (name.starts_with("gt.") || (isa<FullOp>(op) && name == "value")) continue;
      // The family leaves out integer attributes: shapes, slice positions, axes.
      if (!sizes && isa<DenseI64ArrayAttr, IntegerAttr, ArrayAttr>(a.getValue())) continue;
      os << name << "=" << a.getValue() << ",";
    }
    for (Value r : op.getResults()) {
      number[r] = number.size();
      os << ":";
      type(r.getType());
    }
    os << ";";
  }
  return llvm::xxh3_64bits(text);
}

struct GTMarkHotRegionsPass : impl::GTMarkHotRegionsBase<GTMarkHotRegionsPass> {
  using GTMarkHotRegionsBase::GTMarkHotRegionsBase;

  void runOnOperation() override {
    HotRegionCounter seen; // this run's: a key seen hotAfter times in one module is hot
    getOperation().walk([&](func::FuncOp func) {
      for (Block &block : func.getBody()) formRegions(block, seen);
    });
  }

  void formRegions(Block &block, HotRegionCounter &seen) {
    SmallVector<Operation *> run, frees;
    int64_t worker = -1;
    auto close = [&] {
      // Independent chains in one run (loop iterations, per-parameter optimizer updates)
      // become separate regions: each repeats on its own, whatever its neighbours do.
      bool built = false;
      for (ArrayRef<Operation *> component : components(run))
        for (ArrayRef<Operation *> chunk : chunks(component))
          if (int64_t(chunk.size()) >= minOps) built |= buildRegion(chunk, seen) != nullptr;
      // A region sits where its last op was, so a free between its ops would now come before
      // one of its uses: such a free follows the last op (region or not) that uses its value.
      // Every other free stays where the client put it, and its memory comes back as early:
      // moving all of a run's frees after its last region kept every intermediate of the run
      // alive at once (200 eager multiplications of 2 MiB tensors in one batch peaked at
      // 400 MiB, and each result landed on fresh pages).
      if (built) {
        SmallVector<std::pair<Operation *, Operation *>> moves; // (free, its value's last use)
        for (Operation *free : frees) {
          if (free->getBlock() != &block) continue; // moved into a region: freed inside it
          Operation *last = nullptr;
          for (Operation *user : free->getOperand(0).getUsers())
            if (Operation *at = block.findAncestorOpInBlock(*user); at && at != free)
              if (!last || last->isBeforeInBlock(at)) last = at;
          if (last && free->isBeforeInBlock(last)) moves.push_back({free, last});
        }
        for (auto [free, last] : moves) free->moveAfter(last);
      }
      run.clear();
      frees.clear();
    };
    // Building a region moves later frees into it, so iterate over a snapshot.
    SmallVector<Operation *> ops = llvm::map_to_vector(block, [](Operation &op) { return &op; });
    for (Operation *op : ops) {
      if (op->getBlock() != &block) continue; // moved into a region already
      if (isFusibleOp(op) && (run.empty() || workerOf(op) == worker)) {
        worker = workerOf(op);
        run.push_back(op);
      } else if (isa<FreeOp>(op) && !run.empty()) {
        frees.push_back(op);
      } else {
        close();
        if (isFusibleOp(op)) { // a fusible op on another worker starts the next run
          worker = workerOf(op);
          run.push_back(op);
        }
      }
    }
    close();
  }

  /// The weakly connected components of `run` (ops linked by def-use edges), each in order.
  /// A scalar's fill read by several components does not join them: passing a 0-d tensor from
  /// one kernel to another costs nothing, and the chains that share a number are independent
  /// otherwise (the fill joins the component that reads it when only one does). Optimizers
  /// issue their updates op by op over all parameters (foreach), and
  /// every parameter's chain reads the same step-size scalar: linked through it, the chains
  /// would be one component, cut in issue order into regions of one op for many parameters,
  /// each writing its intermediates out (char_gpt's AdamW update: 2.6 ms per step instead of
  /// 0.5 as a region per parameter).
  static SmallVector<SmallVector<Operation *>> components(ArrayRef<Operation *> run) {
    llvm::DenseMap<Operation *, unsigned> index;
    for (auto [i, op] : llvm::enumerate(run)) index[op] = unsigned(i);
    SmallVector<unsigned> parent(run.size());
    for (unsigned i = 0; i < parent.size(); ++i) parent[i] = i;
    auto find = [&](unsigned i) {
      while (parent[i] != i) i = parent[i] = parent[parent[i]];
      return i;
    };
    for (auto [i, op] : llvm::enumerate(run))
      for (Value v : op->getOperands())
        if (Operation *def = v.getDefiningOp(); def && index.count(def) && !isScalarFill(v))
          parent[find(unsigned(i))] = find(index[def]);
    // A scalar's fill joins the component of its readers when there is one.
    for (auto [i, op] : llvm::enumerate(run)) {
      if (op->getNumResults() != 1 || !isScalarFill(op->getResult(0))) continue;
      std::optional<unsigned> reader;
      bool several = false;
      for (Operation *user : op->getResult(0).getUsers())
        if (auto it = index.find(user); it != index.end()) {
          unsigned c = find(it->second);
          several |= reader && *reader != c;
          reader = c;
        }
      if (reader && !several) parent[find(unsigned(i))] = *reader;
    }
    llvm::MapVector<unsigned, SmallVector<Operation *>> groups;
    for (auto [i, op] : llvm::enumerate(run)) groups[find(unsigned(i))].push_back(op);
    SmallVector<SmallVector<Operation *>> out;
    for (auto &[root, ops] : groups) out.push_back(std::move(ops));
    return out;
  }

  /// `component` cut in order into pieces whose regions take at most `maxArgs` kernel
  /// arguments each (a piece's region is placed at its last op, after every op of the pieces
  /// before it, so the cut keeps every use after its definition).
  SmallVector<SmallVector<Operation *>> chunks(ArrayRef<Operation *> component) const {
    SmallVector<SmallVector<Operation *>> out(1);
    KernelArgs args;
    for (Operation *op : component) {
      args.add(op);
      if (!out.back().empty() && args.count() > maxArgs) { // op starts the next piece
        out.emplace_back();
        args = KernelArgs();
        args.add(op);
      }
      out.back().push_back(op);
    }
    return out;
  }

  /// The kernel arguments of a region made of the ops added so far, in order (as the worker
  /// counts them, see RegionSpec::numArgs): its inputs, one fill value per gt.full, and its
  /// outputs (results used outside it or never freed; see buildRegion). Kept up to date op by
  /// op: adding an op only changes the status of the values it reads and its own results.
  struct KernelArgs {
    llvm::SmallPtrSet<Operation *, 16> ops;
    llvm::SmallPtrSet<Value, 16> inputs;
    llvm::DenseMap<Value, bool> isOutput;
    int64_t fills = 0, outputs = 0;

    int64_t count() const { return int64_t(inputs.size()) + fills + outputs; }

    void add(Operation *op) {
      ops.insert(op);
      fills += isa<FullOp>(op);
      for (Value v : op->getOperands()) {
        Operation *def = v.getDefiningOp();
        if (!def || !ops.contains(def)) inputs.insert(v);
        else update(v); // one of ours: `op` may have been its last outside use
      }
      for (Value r : op->getResults()) update(r);
    }

    void update(Value r) {
      bool freed = false, escapes = false;
      for (Operation *user : r.getUsers()) {
        if (isa<FreeOp>(user)) freed = true;
        else if (!ops.contains(user)) escapes = true;
      }
      bool now = escapes || !freed, &was = isOutput[r];
      outputs += int64_t(now) - int64_t(was);
      was = now;
    }
  };

  /// Wraps `run` (ops in order, connected) in a gt.region; returns it, or null if nothing
  /// it computes is used afterwards.
  Operation *buildRegion(ArrayRef<Operation *> run, HotRegionCounter &seen) {
    llvm::SmallPtrSet<Operation *, 16> inRun(run.begin(), run.end());
    llvm::SetVector<Value> inputs;
    for (Operation *op : run)
      for (Value v : op->getOperands())
        if (!v.getDefiningOp() || !inRun.contains(v.getDefiningOp())) inputs.insert(v);
    // A result stays inside only if this batch frees it and nothing else outside the run uses
    // it; otherwise it is yielded (an unfreed value lives on: a later batch may read it).
    SmallVector<Value> outputs;
    SmallVector<Operation *> innerFrees;
    for (Operation *op : run)
      for (Value r : op->getResults()) {
        bool freed = false, escapes = false;
        for (OpOperand &use : r.getUses()) {
          if (isa<FreeOp>(use.getOwner())) freed = true;
          else if (!inRun.contains(use.getOwner())) escapes = true;
        }
        escapes = escapes || !freed;
        if (escapes) {
          outputs.push_back(r);
        } else {
          for (OpOperand &use : r.getUses())
            if (isa<FreeOp>(use.getOwner())) innerFrees.push_back(use.getOwner());
        }
      }
    if (outputs.empty()) return nullptr; // dead code: leave it to the eager path

    Operation *last = run.back();
    OpBuilder b(last->getContext());
    b.setInsertionPointAfter(last);
    auto region = b.create<RegionOp>(last->getLoc(), ValueRange(outputs).getTypes(), inputs.getArrayRef(),
                                     b.getStringAttr(""), UnitAttr());
    Block *body = new Block();
    region.getBody().push_back(body);
    IRMapping map;
    for (Value in : inputs) map.map(in, body->addArgument(in.getType(), in.getLoc()));
    for (Operation *op : run) {
      op->moveBefore(body, body->end());
      for (OpOperand &operand : op->getOpOperands())
        if (Value inner = map.lookupOrNull(operand.get())) operand.set(inner);
    }
    for (Operation *free : innerFrees) free->moveBefore(body, body->end());
    b.setInsertionPointToEnd(body);
    b.create<YieldOp>(last->getLoc(), outputs);
    for (auto [i, out] : llvm::enumerate(outputs))
      out.replaceUsesWithIf(region.getResult(i), [&](OpOperand &use) {
        return use.getOwner()->getParentOp() != region.getOperation();
      });

    uint64_t key = structuralKey(*body);
    char hex[17];
    std::snprintf(hex, sizeof hex, "%016llx", (unsigned long long)key);
    region.setKey(hex);
    std::snprintf(hex, sizeof hex, "%016llx", (unsigned long long)structuralKey(*body, /*sizes=*/false));
    region->setAttr(kRegionFamilyAttr, b.getStringAttr(hex));
    uint64_t family = std::strtoull(hex, nullptr, 16);
    // The worker: its ops' `gt.worker`, else the @workerN function's (gt-split-by-worker), else 0.
    Attribute worker = run.front()->getAttr("gt.worker");
    if (!worker)
      if (auto func = region->getParentOfType<func::FuncOp>()) worker = func->getAttr("gt.worker");
    region->setAttr("gt.worker", worker ? worker : b.getI64IntegerAttr(0));
    bool forced = llvm::all_of(run, [](Operation *op) { return op->hasAttr("gt.compile"); });
    if (seen.sighted(key, family, hotAfter, forced)) region.setHot(true);
    return region;
  }
};

} // namespace

} // namespace mlir::gt
