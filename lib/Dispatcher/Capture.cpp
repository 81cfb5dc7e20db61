// Capture: instructions -> gt dialect module; placed module -> per-worker instruction order.
#include "gt/Dispatcher/Capture.h"

#include "gt/Dialect/GTOps.h"
#include "gt/Core/Trace.h"
#include "gt/Dialect/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Pass/PassInstrumentation.h"
#include "mlir/Pass/PassManager.h"
#include "llvm/Support/raw_ostream.h"

#include <stdexcept>
#include <unordered_map>

using namespace mlir;

namespace gt::dispatcher {

static Location locationOf(MLIRContext &ctx, const std::string &where) {
  auto colon = where.rfind(':');
  if (colon == std::string::npos) return UnknownLoc::get(&ctx);
  unsigned line = unsigned(std::strtoul(where.c_str() + colon + 1, nullptr, 10));
  return FileLineColLoc::get(&ctx, where.substr(0, colon), line, 0);
}

OwningOpRef<ModuleOp> captureBatch(MLIRContext &ctx, const std::vector<Instruction> &batch,
                                   const std::function<std::optional<External>(uint64_t)> &lookup) {
  OpBuilder b(&ctx);
  OwningOpRef<ModuleOp> module = ModuleOp::create(UnknownLoc::get(&ctx));
  b.setInsertionPointToEnd(module->getBody());
  auto func = b.create<func::FuncOp>(UnknownLoc::get(&ctx), "batch", b.getFunctionType({}, {}));
  Block *body = func.addEntryBlock();
  b.setInsertionPointToStart(body);

  std::unordered_map<uint64_t, Value> values; // session id -> SSA value in this batch
  std::unordered_map<uint64_t, TensorType> types;
  std::vector<std::pair<uint64_t, External>> arguments; // per block argument
  auto operand = [&](uint64_t id, const Instruction &inst) -> Value {
    if (auto it = values.find(id); it != values.end()) return it->second;
    std::optional<External> ext = lookup(id);
    if (!ext)
      throw std::invalid_argument(std::string(opInfo(inst.op).mnemonic) +
                                  (inst.location.empty() ? "" : " at " + inst.location) + ": tensor " +
                                  std::to_string(id) + " does not exist in this session");
    Value arg = body->addArgument(mlir::gt::toTensorType(&ctx, ext->type), UnknownLoc::get(&ctx));
    arguments.push_back({id, *ext});
    types[id] = ext->type;
    return values[id] = arg;
  };

  for (size_t i = 0; i < batch.size(); ++i) {
    const Instruction &inst = batch[i];
    Location loc = locationOf(ctx, inst.location);
    if (inst.op == OpCode::Free) { // one gt.free per tensor it names (a freed value stays in `values`,
      for (uint64_t id : inst.operands) { // so a later use in this batch reaches gt-verify)
        OperationState state(loc, "gt.free");
        state.addOperands(operand(id, inst));
        state.addAttribute("gt.inst", b.getI64IntegerAttr(int64_t(i)));
        b.create(state);
      }
      continue;
    }
    std::vector<Value> operands;
    std::vector<TensorType> operandTypes;
    for (uint64_t id : inst.operands) {
      operands.push_back(operand(id, inst));
      operandTypes.push_back(types[id]);
    }
    OperationState state(loc, std::string("gt.") + opInfo(inst.op).mnemonic);
    state.addOperands(operands);
    // The client's type, carried: gt's op verifier checks it against the op table once
    // (runDispatcherPipeline). A batch without types (hand-written) gets them inferred here.
    TensorType result;
    try {
      result = inst.type ? *inst.type : inferType(inst.op, operandTypes, inst.attrs);
    } catch (const std::exception &e) {
      throw std::invalid_argument(std::string(opInfo(inst.op).mnemonic) +
                                  (inst.location.empty() ? "" : " at " + inst.location) + ": " + e.what());
    }
    state.addTypes(mlir::gt::toTensorType(&ctx, result));
    types[inst.result] = result;
    NamedAttrList attrs;
    mlir::gt::appendAttrs(b, inst.op, inst.attrs, attrs);
    if (inst.op == OpCode::Upload) attrs.append("blob", b.getI64IntegerAttr(int64_t(i)));
    attrs.append("gt.inst", b.getI64IntegerAttr(int64_t(i)));
    attrs.append("gt.id", b.getI64IntegerAttr(int64_t(inst.result)));
    if (!inst.signal.empty()) {
      attrs.append("gt.signal", b.getStringAttr(inst.signal));
      if (inst.backward) attrs.append("gt.backward", b.getUnitAttr());
    }
    state.addAttributes(attrs);
    values[inst.result] = b.create(state)->getResult(0);
  }
  b.create<func::ReturnOp>(UnknownLoc::get(&ctx));
  func.setFunctionType(b.getFunctionType(body->getArgumentTypes(), {}));
  // All argument attributes at once: setArgAttr rebuilds the array of every argument's
  // dictionary on each call, and the context keeps each of those arrays (uniqued, never freed),
  // so a batch reading n live tensors left O(n^2) bytes behind: 24 GB over 180 episodes of
  // pytorch/examples' reinforce.py, whose backward reads every step's saved log-probability.
  SmallVector<DictionaryAttr> argAttrs;
  argAttrs.reserve(arguments.size());
  for (auto &[id, ext] : arguments) {
    NamedAttrList attrs;
    attrs.append("gt.id", b.getI64IntegerAttr(int64_t(id)));
    attrs.append("gt.worker", b.getI64IntegerAttr(ext.worker));
    if (ext.sharding) attrs.append("gt.sharding", mlir::gt::ShardingAttr::fromCore(&ctx, *ext.sharding));
    argAttrs.push_back(attrs.getDictionary(&ctx));
  }
  func.setAllArgAttrs(argAttrs);
  return module;
}

namespace {
/// Reports each pass's run to a PassTimer (the context runs single-threaded: a stack pairs them).
class TimePasses : public PassInstrumentation {
public:
  explicit TimePasses(PassTimer report) : report_(std::move(report)) {}
  void runBeforePass(Pass *, Operation *) override { starts_.push_back(monotonicNs()); }
  void runAfterPass(Pass *pass, Operation *) override { end(pass); }
  void runAfterPassFailed(Pass *pass, Operation *) override { end(pass); }

private:
  void end(Pass *pass) {
    if (starts_.empty()) return;
    int64_t start = starts_.back();
    starts_.pop_back();
    llvm::StringRef name = pass->getArgument();
    report_((name.empty() ? pass->getName() : name).str(), start, monotonicNs());
  }
  PassTimer report_;
  std::vector<int64_t> starts_;
};
} // namespace

void runDispatcherPipeline(ModuleOp module, const mlir::gt::DispatcherPipelineOptions &options, const PassTimer &onPass) {
  std::string diagnostics;
  llvm::raw_string_ostream os(diagnostics);
  ScopedDiagnosticHandler handler(module.getContext(), [&](Diagnostic &d) {
    if (auto file = dyn_cast<FileLineColLoc>(d.getLocation())) // the user's "file.py:12"
      os << file.getFilename().str() << ":" << file.getLine() << ": " << d.str() << "\n";
    else
      os << d.getLocation() << ": " << d.str() << "\n";
    return success();
  });
  PassManager pm(module.getContext());
  pm.enableVerifier(options.verifyEachPass); // the input is verified below either way
  mlir::gt::buildDispatcherPipeline(pm, options);
  if (onPass) pm.addInstrumentation(std::make_unique<TimePasses>(onPass));
  if (failed(verify(module)) || failed(pm.run(module))) {
    while (!diagnostics.empty() && diagnostics.back() == '\n') diagnostics.pop_back();
    throw std::invalid_argument("invalid instruction stream: " + diagnostics);
  }
}

} // namespace gt::dispatcher
