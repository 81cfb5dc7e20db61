// The worker's kernel compiler: gt op -> linalg -> LLVM -> object code -> ORC JIT, cached.
#include "gt/Worker/KernelCompiler.h"

#include "gt/Dialect/GTOps.h"
#include "gt/Dialect/Passes.h"
#include "gt/Worker/KernelSourceHash.h"

#include "mlir/Conversion/VectorToLLVM/ConvertVectorToLLVMPass.h"
#include "mlir/Conversion/AffineToStandard/AffineToStandard.h"
#include "mlir/Conversion/ArithToLLVM/ArithToLLVM.h"
#include "mlir/Conversion/ControlFlowToLLVM/ControlFlowToLLVM.h"
#include "mlir/Conversion/FuncToLLVM/ConvertFuncToLLVMPass.h"
#include "mlir/Conversion/IndexToLLVM/IndexToLLVM.h"
#include "mlir/Conversion/MathToLLVM/MathToLLVM.h"
#include "mlir/Conversion/MathToLibm/MathToLibm.h"
#include "mlir/Conversion/MemRefToLLVM/MemRefToLLVM.h"
#include "mlir/Conversion/ReconcileUnrealizedCasts/ReconcileUnrealizedCasts.h"
#include "mlir/Conversion/OpenMPToLLVM/ConvertOpenMPToLLVM.h"
#include "mlir/Conversion/SCFToControlFlow/SCFToControlFlow.h"
#include "mlir/Conversion/SCFToOpenMP/SCFToOpenMP.h"
#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Arith/Transforms/BufferizableOpInterfaceImpl.h"
#include "mlir/Dialect/Arith/Transforms/Passes.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Bufferization/Pipelines/Passes.h"
#include "mlir/Dialect/Bufferization/Transforms/OneShotAnalysis.h"
#include "mlir/Dialect/Bufferization/Transforms/Passes.h"
#include "mlir/Dialect/ControlFlow/IR/ControlFlow.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/Passes.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"
#include "mlir/Dialect/Linalg/Transforms/BufferizableOpInterfaceImpl.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/MemRef/Transforms/Passes.h"
#include "mlir/Dialect/OpenMP/OpenMPDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/SCF/Transforms/BufferizableOpInterfaceImpl.h"
#include "mlir/Dialect/Tensor/Transforms/BufferizableOpInterfaceImpl.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Target/LLVMIR/Dialect/Builtin/BuiltinToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/LLVMIR/LLVMToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/OpenMP/OpenMPToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Export.h"
#include "mlir/Transforms/Passes.h"

#include "llvm/Config/llvm-config.h"
#include "llvm/ExecutionEngine/Orc/CompileUtils.h"
#include "llvm/ExecutionEngine/Orc/ExecutionUtils.h"
#include "llvm/ExecutionEngine/Orc/JITTargetMachineBuilder.h"
#include "llvm/ExecutionEngine/Orc/LLJIT.h"
#include "llvm/IR/Module.h"
#include "llvm/Passes/PassBuilder.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/Support/raw_ostream.h"
#include "llvm/Support/xxhash.h"
#include "llvm/Target/TargetMachine.h"

#include <array>
#include <atomic>
#include <chrono>
#include <functional>
#include <utility>
#include <cstdlib>
#include <bit>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <sstream>
#include <stdexcept>
#include <unordered_map>

namespace fs = std::filesystem;
using namespace mlir;

namespace gt::worker {

/// In every disk-cache key with the kernel's gt-level source: the kernel ABI's version, LLVM's,
/// and GT_KERNEL_SOURCE_HASH, a hash of the dialect, its lowering passes, this compiler and the
/// op spec (cmake/KernelSourceHash.cmake), so a build that lowers anything differently never
/// loads an older build's kernels.
static constexpr const char *kCompilerVersion = "gt-kernels-29 llvm-" LLVM_VERSION_STRING " src-" GT_KERNEL_SOURCE_HASH;

/// The op table's numbering (every op's mnemonic in OpCode order), also in every disk key: a
/// kernel names the op whose check failed by its number (an out-of-range index), so a kernel
/// compiled before an op was added to the spec would name the wrong op.
static const std::string &opTableKey() {
  static const std::string key = [] {
    std::string names;
    for (int i = 0; i < int(OpCode::NumOps); ++i) names += std::string(opInfo(OpCode(i)).mnemonic) + ",";
    return std::to_string(llvm::xxh3_64bits(names));
  }();
  return key;
}

namespace {
/// Calls `entry` with `N` pointer arguments taken from `d`.
template <size_t... I> void callWith(void *entry, void **d, std::index_sequence<I...>) {
  using Fn = void (*)(decltype((void)I, (void *)nullptr)...);
  reinterpret_cast<Fn>(entry)(d[I]...);
}
template <size_t... N> constexpr auto makeCallTable(std::index_sequence<N...>) {
  return std::array<void (*)(void *, void **), sizeof...(N)>{
      [](void *entry, void **d) { callWith(entry, d, std::make_index_sequence<N>{}); }...};
}
constexpr auto kCallTable = makeCallTable(std::make_index_sequence<Kernel::kMaxArgs + 1>{});
} // namespace

namespace {
/// LLVM's x86 backend rounds vectors of bf16 through float and calls __truncsfbf2, which
/// libgcc 12 does not have. Same ABI as compiler-rt's: float in, the 16 result bits in xmm0
/// (declared _Float16 only to get that register; no half conversion happens).
extern "C" _Float16 gtTruncSFBF2(float value) { return std::bit_cast<_Float16>(floatToBFloat16(value)); }

/// The first failed check since takeKernelError() last ran (see mlir::gt::kRuntimeErrorFunction).
std::mutex kernelErrorMu;
std::optional<KernelError> kernelError;
std::atomic<bool> kernelErrorSet{false};

/// What CPU kernels call where a check fails (gt_runtime_error), on any of their threads.
extern "C" void gtRuntimeError(int64_t op, int64_t check, int64_t value, int64_t bound) {
  std::lock_guard lock(kernelErrorMu);
  if (kernelError || op < 0 || op >= int64_t(OpCode::NumOps)) return;
  kernelError = KernelError{OpCode(op), check, value, bound};
  kernelErrorSet.store(true, std::memory_order_release);
}
} // namespace

std::optional<KernelError> takeKernelError() {
  if (!kernelErrorSet.load(std::memory_order_acquire)) return std::nullopt; // the common case: one load
  std::lock_guard lock(kernelErrorMu);
  std::optional<KernelError> out = std::move(kernelError);
  kernelError.reset();
  kernelErrorSet.store(false, std::memory_order_release);
  return out;
}

std::string KernelError::message() const {
  switch (mlir::gt::RuntimeCheck(check)) {
  case mlir::gt::RuntimeCheck::IndexOutOfRange:
    return "index " + std::to_string(value) + " is out of bounds for dimension with size " + std::to_string(bound);
  case mlir::gt::RuntimeCheck::DivisionByZero:
    return "ZeroDivisionError (integer division or remainder of " + std::to_string(value) + " by zero)";
  case mlir::gt::RuntimeCheck::ClassOutOfRange:
    return value < 0 ? "Class values must be non-negative (got " + std::to_string(value) + ")"
                     : "Class values must be smaller than num_classes (got " + std::to_string(value) + ", " +
                           std::to_string(bound) + " classes)";
  }
  return "check " + std::to_string(check) + " failed";
}

void Kernel::invoke(void **d) const {
  if (numArgs < 0 || numArgs > kMaxArgs) throw std::logic_error("kernel with unsupported argument count");
  kCallTable[size_t(numArgs)](entry, d);
}

int RegionSpec::numFills() const {
  int n = 0;
  for (const Op &op : ops) n += op.code == OpCode::Full;
  return n;
}

struct KernelCompiler::Impl {
  std::string cacheDir;
  CompilerTarget target;
  bool cuda() const { return target.kind == CompilerTarget::Kind::CUDA; }
  MLIRContext ctx{MLIRContext::Threading::DISABLED};
  std::unique_ptr<llvm::TargetMachine> tm;
  std::unique_ptr<llvm::orc::LLJIT> jit;
  std::string targetKey; ///< triple, CPU and features: part of every disk-cache key
  /// gt-cpu-parallel-loops' min-work for fused kernels: the fewest elements one load or store of a loop nest moves
  /// to run on several threads (GT_JIT_PARALLEL_MIN; part of targetKey). While libomp's threads
  /// still spin from the last loop or GEMM (CPUDevice: KMP_BLOCKTIME=2 ms) a loop of 2^16
  /// elements gains from a second thread; char_gpt's step (most of its regions write 2^18
  /// elements) took 42-43 ms with 2^16 or 2^17 against 48 ms with 2^20 (benchmarks/RESULTS.md).
  static constexpr int64_t kParallelMinElements = int64_t(1) << 16;
  int64_t parallelMinElements = kParallelMinElements;
  /// LLVM's "prefer-vector-width" for CPU kernels, bits (GT_JIT_VECTOR_WIDTH; part of
  /// targetKey): 512 where the host has AVX-512, as PyTorch's CPU kernels use it; 0 keeps
  /// LLVM's choice (256 bits on Intel's AVX-512 server cores). Elementwise code computes each
  /// lane alike and gt-cpu-reductions fixes its own lane count, so no result depends on it.
  /// char_gpt's step spends ~20 % less in its erf/exp-heavy regions (benchmarks/RESULTS.md).
  int vectorWidth = 0;
  std::unordered_map<std::string, std::unique_ptr<Kernel>> kernels; ///< by memory key; guarded by kernelsMu
  std::unordered_map<std::string, std::string> failures;            ///< keys that failed to compile, and why
  CompilerStats stats;
  std::mutex compileMu; ///< held while compiling (the MLIR context and the JIT are one thread's at a time)
  std::mutex kernelsMu; ///< guards `kernels` and `failures` only, so a lookup never waits for a compile
  std::mutex statsMu;   ///< guards `stats` only, so stats() never waits for a compile

  /// The compiled kernel of `key`, or nullptr; rethrows a recorded failure.
  const Kernel *lookup(const std::string &key) {
    std::lock_guard lock(kernelsMu);
    if (auto it = kernels.find(key); it != kernels.end()) {
      count([](CompilerStats &st) { st.memoryHits++; });
      return it->second.get();
    }
    if (auto it = failures.find(key); it != failures.end()) throw std::runtime_error(it->second);
    return nullptr;
  }

  /// The kernel of `key`: looked up, else built by `build` and compiled (one compile at a time;
  /// a failure is remembered, so the same kernel is never tried twice).
  template <class Build> const Kernel &getOrCompile(const std::string &key, Build build) {
    if (const Kernel *k = lookup(key)) return *k;
    std::lock_guard compiling(compileMu);
    if (const Kernel *k = lookup(key)) return *k; // compiled meanwhile
    try {
      return build();
    } catch (const std::exception &e) {
      std::lock_guard lock(kernelsMu);
      if (failures.size() < 4096) failures.emplace(key, e.what());
      throw;
    }
  }

  template <class F> void count(F update) {
    std::lock_guard lock(statsMu);
    update(stats);
  }

  Impl(std::string dir, CompilerTarget t) : cacheDir(std::move(dir)), target(std::move(t)) {
    llvm::InitializeNativeTarget();
    llvm::InitializeNativeTargetAsmPrinter();
    DialectRegistry registry;
    mlir::gt::registerGTDialects(registry);
    registry.insert<bufferization::BufferizationDialect, memref::MemRefDialect, scf::SCFDialect,
                    cf::ControlFlowDialect, affine::AffineDialect, LLVM::LLVMDialect, omp::OpenMPDialect>();
    arith::registerBufferizableOpInterfaceExternalModels(registry);
    linalg::registerBufferizableOpInterfaceExternalModels(registry);
    tensor::registerBufferizableOpInterfaceExternalModels(registry);
    scf::registerBufferizableOpInterfaceExternalModels(registry); // index_add's loops (CPU)
    registerBuiltinDialectTranslation(registry);
    registerLLVMDialectTranslation(registry);
    registerOpenMPDialectTranslation(registry); // fused CPU kernels' parallel loops
    if (cuda()) mlir::gt::registerGTGPUDialects(registry);
    ctx.appendDialectRegistry(registry);
    ctx.loadAllAvailableDialects();

    auto jtmb = llvm::orc::JITTargetMachineBuilder::detectHost();
    if (!jtmb) throw std::runtime_error("kernel compiler: cannot detect the host target");
    jtmb->setCodeGenOptLevel(llvm::CodeGenOptLevel::Aggressive);
    auto machine = jtmb->createTargetMachine();
    if (!machine) throw std::runtime_error("kernel compiler: cannot create a target machine");
    tm = std::move(*machine);
    if (const char *v = std::getenv("GT_JIT_PARALLEL_MIN"); v && *v) {
      char *end = nullptr;
      long long n = std::strtoll(v, &end, 10);
      if (*end || n < 1)
        throw std::runtime_error(std::string("GT_JIT_PARALLEL_MIN must be a positive number of elements, got '") + v + "'");
      parallelMinElements = n;
    }
    if (!cuda() && tm->getTargetFeatureString().contains("+avx512f")) vectorWidth = 512;
    if (const char *v = std::getenv("GT_JIT_VECTOR_WIDTH"); v && *v) {
      char *end = nullptr;
      long n = std::strtol(v, &end, 10);
      if (*end || (n != 0 && n != 128 && n != 256 && n != 512))
        throw std::runtime_error(std::string("GT_JIT_VECTOR_WIDTH must be 128, 256, 512 or 0 (LLVM's choice), got '") + v + "'");
      vectorWidth = int(n);
    }
    targetKey = tm->getTargetTriple().str() + " " + tm->getTargetCPU().str() + " " +
                tm->getTargetFeatureString().str() + (cuda() ? " cuda " + target.chip : std::string()) +
                " parallel-min " + std::to_string(parallelMinElements) +
                (vectorWidth ? " vector-width " + std::to_string(vectorWidth) : std::string());
    auto built = llvm::orc::LLJITBuilder().setJITTargetMachineBuilder(*jtmb).create();
    if (!built) throw std::runtime_error("kernel compiler: cannot create the JIT: " + llvm::toString(built.takeError()));
    jit = std::move(*built);
    // Kernels call libm (tanhf, ...) and malloc/free: resolve them in this process.
    jit->getMainJITDylib().addGenerator(llvm::cantFail(
        llvm::orc::DynamicLibrarySearchGenerator::GetForCurrentProcess(jit->getDataLayout().getGlobalPrefix())));
    // Runtime functions of the target (the mgpu* functions CUDA host code calls).
    llvm::orc::SymbolMap symbols;
    symbols[jit->mangleAndIntern("__truncsfbf2")] = {llvm::orc::ExecutorAddr::fromPtr(&gtTruncSFBF2),
                                                     llvm::JITSymbolFlags::Exported};
    symbols[jit->mangleAndIntern(mlir::gt::kRuntimeErrorFunction)] = {llvm::orc::ExecutorAddr::fromPtr(&gtRuntimeError),
                                                                      llvm::JITSymbolFlags::Exported};
    for (auto &[name, address] : target.symbols)
      symbols[jit->mangleAndIntern(name)] = {llvm::orc::ExecutorAddr::fromPtr(address), llvm::JITSymbolFlags::Exported};
    if (!symbols.empty()) llvm::cantFail(jit->getMainJITDylib().define(llvm::orc::absoluteSymbols(std::move(symbols))));
  }

  MemRefType memrefOf(const TensorType &t) {
    return MemRefType::get(t.shape, mlir::gt::toElementType(&ctx, t.dtype));
  }

  /// One gt op for `code` (attributes from `attrs`, fill values and seeds as operands).
  Operation *createOp(OpBuilder &b, Location loc, OpCode code, ValueRange operands, const OpAttrs &attrs,
                      const TensorType &result) {
    Type type = mlir::gt::toTensorType(&ctx, result);
    if (code == OpCode::Full || code == OpCode::Randn || code == OpCode::Rand) // value/seed come as operands
      return mlir::gt::createOp(b, loc, code, operands, NamedAttrList(), type);
    return mlir::gt::createOp(b, loc, code, operands, attrs, type);
  }

  /// func @kernel(%args: memref..., %outs: memref...) { to_tensor; <body>; materialize_in_destination }
  /// `body` maps the input tensors to the output tensors.
  OwningOpRef<ModuleOp> buildModule(std::span<const TensorType> inputs, std::span<const TensorType> outputs,
                                    const std::function<SmallVector<Value>(OpBuilder &, Location, ValueRange)> &body,
                                    const std::string &what) {
    OpBuilder b(&ctx);
    Location loc = UnknownLoc::get(&ctx);
    OwningOpRef<ModuleOp> module = ModuleOp::create(loc);
    b.setInsertionPointToEnd(module->getBody());
    SmallVector<Type> argTypes;
    for (const TensorType &t : inputs) argTypes.push_back(memrefOf(t));
    for (const TensorType &t : outputs) argTypes.push_back(memrefOf(t));
    auto func = b.create<func::FuncOp>(loc, "kernel", b.getFunctionType(argTypes, {}));
    func->setAttr("llvm.emit_c_interface", b.getUnitAttr());
    if (llvm::any_of(argTypes, [](Type t) { return !cast<MemRefType>(t).hasStaticShape(); }))
      func->setAttr(mlir::gt::kDynamicSizesAttr, b.getUnitAttr()); // sizes come at run time
    Block *entry = func.addEntryBlock();
    b.setInsertionPointToStart(entry);
    SmallVector<Value> tensors;
    for (size_t i = 0; i < inputs.size(); ++i)
      tensors.push_back(b.create<bufferization::ToTensorOp>(loc, func.getArgument(unsigned(i)), /*restrict=*/true));
    SmallVector<Value> results = body(b, loc, tensors);
    for (size_t i = 0; i < outputs.size(); ++i)
      b.create<bufferization::MaterializeInDestinationOp>(loc, TypeRange{}, results[i],
                                                          func.getArgument(unsigned(inputs.size() + i)), true, true);
    b.create<func::ReturnOp>(loc);
    // The one check of a carried result type against the op table, per kernel (see Instruction::type).
    std::string diagnostics;
    llvm::raw_string_ostream os(diagnostics);
    ScopedDiagnosticHandler handler(&ctx, [&](Diagnostic &d) {
      os << (diagnostics.empty() ? "" : "; ") << d.str();
      return success();
    });
    if (failed(mlir::verify(*module)))
      throw std::runtime_error("the kernel for " + what + " does not verify: " + diagnostics);
    return module;
  }

  /// Looks `module` up in the disk cache or lowers and compiles it, then loads it.
  const Kernel &compile(const std::string &memoryKey, OwningOpRef<ModuleOp> module, int numArgs, bool fuse) {
    auto start = std::chrono::steady_clock::now();

    std::string text;
    llvm::raw_string_ostream os(text);
    module->print(os);
    uint64_t hash = llvm::xxh3_64bits(text + kCompilerVersion + opTableKey() + targetKey);
    char name[32];
    std::snprintf(name, sizeof name, "gt_%016llx", (unsigned long long)hash);

    std::string object;
    std::vector<std::string> ptx;
    fs::path path;
    if (!cacheDir.empty()) {
      path = fs::path(cacheDir) / "kernels" / (std::string(name) + ".o");
      std::ifstream in(path, std::ios::binary);
      if (in) object.assign(std::istreambuf_iterator<char>(in), {});
    }
    bool fromDisk = !object.empty();
    if (fromDisk) {
      count([](CompilerStats &st) { st.diskHits++; });
    } else {
      module->lookupSymbol<func::FuncOp>("kernel").setName(name);
      if (const char *dump = std::getenv("GT_DUMP_KERNELS"); dump && *dump) { // kernel source, replayable with gt-opt
        std::error_code ec;
        fs::create_directories(dump, ec);
        std::ofstream(fs::path(dump) / (std::string(name) + ".mlir")) << text;
      }
      lowerToLLVMDialect(*module, fuse);
      ptx = ptxOf(*module);
      if (const char *dump = std::getenv("GT_DUMP_KERNELS"); dump && *dump)
        for (size_t i = 0; i < ptx.size(); ++i)
          std::ofstream(fs::path(dump) / (std::string(name) + "." + std::to_string(i) + ".ptx")) << ptx[i];
      object = objectCode(*module, name);
      double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
      count([&](CompilerStats &st) {
        st.compiled++;
        st.compileMs += ms;
      });
    }
    auto kernel = std::make_unique<Kernel>();
    try {
      kernel->entry = load(object, name);
    } catch (const std::exception &) {
      std::error_code ec;
      if (fromDisk) fs::remove(path, ec); // a bad cache entry must not fail every later run
      throw;
    }
    kernel->numArgs = numArgs;
    kernel->ptx = std::move(ptx);
    if (!fromDisk && !path.empty()) { // only kernels that loaded; write-then-rename, so a reader never sees half a file
      std::error_code ec;
      fs::create_directories(path.parent_path(), ec);
      fs::path tmp = path;
      tmp += ".tmp" + std::to_string(::getpid());
      std::ofstream(tmp, std::ios::binary).write(object.data(), std::streamsize(object.size()));
      fs::rename(tmp, path, ec);
    }
    if (fromDisk) { // read + link + symbol lookup
      double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
      count([ms](CompilerStats &st) { st.diskLoadMs += ms; });
    }
    std::lock_guard lock(kernelsMu);
    return *(kernels[memoryKey] = std::move(kernel));
  }

  void lowerToLLVMDialect(ModuleOp module, bool fuse) {
    PassManager pm(&ctx);
    bool scatterLoops = !cuda(); // sequential loops on the CPU; the dense form on the GPU
    // Out-of-range indices and integer division by zero call gt_runtime_error: on the CPU the
    // worker's gtRuntimeError, on the GPU writes to the module's error global (gt-gpu-runtime-errors).
    bool checks = true;
    if (fuse) {
      // GPU kernels are memory-bound: small elementwise chains recomputed in each consumer
      // (softmax's row reductions and division read the scores), not stored and read back.
      mlir::gt::buildFusionPipeline(pm, scatterLoops, checks, /*recompute=*/cuda());
    } else {
      mlir::gt::GTLowerToLinalgOptions lowering;
      lowering.scatterLoops = scatterLoops;
      lowering.checks = checks;
      pm.addPass(mlir::gt::createGTLowerToLinalg(lowering));
      pm.addPass(createCanonicalizerPass());
    }
    pm.addNestedPass<func::FuncOp>(mlir::gt::createGTReshapesAsViews()); // no copy per keepdims reduction
    pm.addPass(bufferization::createEmptyTensorEliminationPass());
    bufferization::OneShotBufferizationOptions bufferization;
    pm.addPass(bufferization::createOneShotBufferizePass(bufferization));
    bufferization::BufferDeallocationPipelineOptions dealloc;
    bufferization::buildBufferDeallocationPipeline(pm, dealloc);
    if (cuda()) {
      mlir::gt::GPUPipelineOptions gpu;
      gpu.chip = target.chip;
      mlir::gt::buildGPUPipeline(pm, gpu);
      runPipeline(pm, module);
      return;
    }
    pm.addNestedPass<func::FuncOp>(mlir::gt::createGTCopyToLinalg());
    // Reductions over the innermost dimension as vector partials, eager and fused alike (so
    // they agree bit for bit).
    pm.addNestedPass<func::FuncOp>(mlir::gt::createGTCPUReductions());
    if (fuse) {
      // A fused kernel (static shapes) splits each large loop nest's outer dimensions over the
      // worker's threads (OpenMP).
      pm.addNestedPass<func::FuncOp>(createConvertLinalgToParallelLoopsPass());
      mlir::gt::GTCPUParallelLoopsOptions parallel;
      parallel.minWork = parallelMinElements;
      pm.addNestedPass<func::FuncOp>(mlir::gt::createGTCPUParallelLoops(parallel));
      // Consecutive nests over the same row blocks (softmax's, LayerNorm's) as one loop: each
      // block's intermediates stay in cache, one fork/join.
      pm.addNestedPass<func::FuncOp>(mlir::gt::createGTCPUFuseParallelLoops());
      pm.addPass(createConvertSCFToOpenMPPass());
      pm.addPass(createCanonicalizerPass()); // inlines the memref.alloca_scope around each loop body
    } else {
      // An eager kernel takes its sizes at run time: each of its loop nests checks its size
      // when it runs and, from the same threshold, splits its outer dimensions over the
      // worker's threads as a fused kernel's do (each element computed as on one thread).
      pm.addNestedPass<func::FuncOp>(createConvertLinalgToParallelLoopsPass());
      mlir::gt::GTCPUParallelLoopsOptions parallel;
      parallel.minWork = parallelMinElements;
      parallel.dynamicSizes = true;
      pm.addNestedPass<func::FuncOp>(mlir::gt::createGTCPUParallelLoops(parallel));
      pm.addPass(createConvertSCFToOpenMPPass());
      pm.addPass(createCanonicalizerPass());
    }
    pm.addNestedPass<func::FuncOp>(mlir::gt::createGTApproximateMath());
    // bf16 extf/truncf as integer ops: x86 has no bf16 rounding instruction and LLVM would call
    // __truncsfbf2, which libgcc 12 lacks. (f16 conversions are F16C instructions or libgcc's.)
    arith::ArithExpandOpsPassOptions expand;
    expand.includeBf16 = true;
    pm.addPass(arith::createArithExpandOpsPass(expand));
    pm.addPass(createConvertSCFToCFPass());
    pm.addPass(memref::createExpandStridedMetadataPass());
    pm.addPass(createLowerAffinePass());
    pm.addPass(createConvertVectorToLLVMPass()); // gt-cpu-reductions' vector partials
    pm.addPass(createFinalizeMemRefToLLVMConversionPass());
    pm.addPass(createConvertMathToLLVMPass());
    pm.addPass(createConvertMathToLibmPass()); // what has no LLVM intrinsic (tanh) calls libm
    pm.addPass(createArithToLLVMConversionPass());
    pm.addPass(createConvertIndexToLLVMPass());
    pm.addPass(createConvertOpenMPToLLVMPass());
    pm.addPass(createConvertFuncToLLVMPass());
    pm.addPass(createConvertControlFlowToLLVMPass());
    pm.addPass(createReconcileUnrealizedCastsPass());
    pm.addPass(mlir::gt::createGTCPUByteBools()); // bool loads and stores that LLVM vectorizes
    runPipeline(pm, module);
  }

  void runPipeline(PassManager &pm, ModuleOp module) {
    std::string diagnostics;
    llvm::raw_string_ostream os(diagnostics);
    ScopedDiagnosticHandler handler(&ctx, [&](Diagnostic &d) {
      os << d.str() << "\n";
      return success();
    });
    if (failed(pm.run(module))) throw std::runtime_error("lowering failed: " + diagnostics);
  }

  /// The PTX of every gpu.binary in `module` (CUDA target, after lowering), without the
  /// trailing NUL that cuModuleLoadData wants and ptxas refuses.
  static std::vector<std::string> ptxOf(ModuleOp module) {
    std::vector<std::string> out;
    module.walk([&](gpu::BinaryOp binary) {
      for (Attribute a : binary.getObjects()) {
        std::string text = cast<gpu::ObjectAttr>(a).getObject().str();
        while (!text.empty() && text.back() == '\0') text.pop_back();
        out.push_back(std::move(text));
      }
    });
    return out;
  }

  /// LLVM's O3 pipeline with loop unrolling off. Kernels are loop nests with constant trip
  /// counts; with unrolling on, O3 for a Zen 3 host fully unrolled the nested copy loops of
  /// a 16x32x64 concat into ~250k instructions, and instruction selection then took minutes.
  /// The vectorizer still interleaves the innermost loops.
  void optimize(llvm::Module &module) {
    if (vectorWidth)
      for (llvm::Function &f : module)
        if (!f.isDeclaration()) f.addFnAttr("prefer-vector-width", std::to_string(vectorWidth));
    llvm::PipelineTuningOptions tuning;
    tuning.LoopUnrolling = false;
    llvm::LoopAnalysisManager lam;
    llvm::FunctionAnalysisManager fam;
    llvm::CGSCCAnalysisManager cgam;
    llvm::ModuleAnalysisManager mam;
    llvm::PassBuilder pb(tm.get(), tuning);
    pb.registerModuleAnalyses(mam);
    pb.registerCGSCCAnalyses(cgam);
    pb.registerFunctionAnalyses(fam);
    pb.registerLoopAnalyses(lam);
    pb.crossRegisterProxies(lam, fam, cgam, mam);
    pb.buildPerModuleDefaultPipeline(llvm::OptimizationLevel::O3).run(module, mam);
  }

  std::string objectCode(ModuleOp module, const std::string &name) {
    llvm::LLVMContext llvmCtx;
    auto llvmModule = translateModuleToLLVMIR(module, llvmCtx, name);
    if (!llvmModule) throw std::runtime_error("translation to LLVM IR failed");
    llvmModule->setDataLayout(tm->createDataLayout());
    llvmModule->setTargetTriple(tm->getTargetTriple().str());
    optimize(*llvmModule);
    if (const char *dump = std::getenv("GT_DUMP_KERNELS"); dump && *dump) { // what LLVM vectorized
      std::error_code ec;
      llvm::raw_fd_ostream out((fs::path(dump) / (name + ".ll")).string(), ec);
      if (!ec) llvmModule->print(out, nullptr);
    }
    auto obj = llvm::orc::SimpleCompiler(*tm)(*llvmModule);
    if (!obj) throw std::runtime_error("code generation failed: " + llvm::toString(obj.takeError()));
    return (*obj)->getBuffer().str();
  }

  void *load(const std::string &object, const std::string &name) {
    if (auto err = jit->addObjectFile(llvm::MemoryBuffer::getMemBufferCopy(object, name)))
      throw std::runtime_error("loading kernel failed: " + llvm::toString(std::move(err)));
    auto sym = jit->lookup("_mlir_ciface_" + name);
    if (!sym) throw std::runtime_error("kernel symbol missing: " + llvm::toString(sym.takeError()));
    return sym->toPtr<void *>();
  }
};

KernelCompiler::KernelCompiler(std::string cacheDir, CompilerTarget target)
    : impl(std::make_unique<Impl>(std::move(cacheDir), std::move(target))) {}
KernelCompiler::~KernelCompiler() = default;

std::string KernelCompiler::defaultCacheDir() {
  if (const char *dir = std::getenv("GT_CACHE_DIR"); dir && *dir) return dir;
  const char *home = std::getenv("HOME");
  return std::string(home ? home : "/tmp") + "/.cache/gt";
}

static std::string memoryKey(OpCode code, std::span<const TensorType> operands, const OpAttrs &attrs,
                             const TensorType &result) {
  std::ostringstream key;
  key << int(code);
  for (const TensorType &t : operands) key << '|' << int(t.dtype) << shapeString(t.shape);
  key << "->" << int(result.dtype) << shapeString(result.shape) << attrsKey(code, attrs);
  return key.str();
}

const Kernel &KernelCompiler::get(OpCode code, std::span<const TensorType> operands,
                                  const OpAttrs &attrs, const TensorType &result) {
  if (operands.size() + 1 > size_t(Kernel::kMaxArgs)) // refused before any compiling
    throw std::runtime_error(std::string(opInfo(code).mnemonic) + ": a kernel takes at most " +
                             std::to_string(Kernel::kMaxArgs) + " arguments, this one needs " +
                             std::to_string(operands.size() + 1));
  std::string key = memoryKey(code, operands, attrs, result);
  return impl->getOrCompile(key, [&]() -> const Kernel & {
    try {
      TensorType results[] = {result};
      auto module = impl->buildModule(operands, results, [&](OpBuilder &b, Location loc, ValueRange in) {
        return SmallVector<Value>{impl->createOp(b, loc, code, in, attrs, result)->getResult(0)};
      }, opInfo(code).mnemonic);
      return impl->compile(key, std::move(module), int(operands.size()) + 1, /*fuse=*/false);
    } catch (const std::exception &e) {
      throw std::runtime_error(std::string("compiling ") + opInfo(code).mnemonic + ": " + e.what());
    }
  });
}

bool KernelCompiler::ready(OpCode code, std::span<const TensorType> operands, const OpAttrs &attrs,
                           const TensorType &result) {
  if (operands.size() + 1 > size_t(Kernel::kMaxArgs)) return true; // get() fails at once
  std::string key = memoryKey(code, operands, attrs, result);
  std::lock_guard lock(impl->kernelsMu);
  return impl->kernels.count(key) || impl->failures.count(key);
}

/// A textual key of the region's structure (ops, attributes that shape code, wiring, types).
static std::string regionMemoryKey(const RegionSpec &r) {
  std::ostringstream key;
  key << "region";
  for (const TensorType &t : r.inputs) key << '|' << int(t.dtype) << shapeString(t.shape);
  for (const RegionSpec::Op &op : r.ops) {
    key << ';' << int(op.code) << '(';
    for (int v : op.operands) key << v << ',';
    key << ')' << int(op.type.dtype) << shapeString(op.type.shape) << attrsKey(op.code, op.attrs);
  }
  key << "->" << shapeString(std::vector<int64_t>(r.outputs.begin(), r.outputs.end()));
  return key.str();
}

const Kernel &KernelCompiler::getRegion(const RegionSpec &r) {
  if (r.numArgs() > Kernel::kMaxArgs)
    throw std::runtime_error("region needs " + std::to_string(r.numArgs()) + " kernel arguments, at most " +
                             std::to_string(Kernel::kMaxArgs) + " are supported");
  std::string key = regionMemoryKey(r);
  return impl->getOrCompile(key, [&]() -> const Kernel & { return compileRegion(key, r); });
}

const Kernel &KernelCompiler::compileRegion(const std::string &key, const RegionSpec &r) {
  std::vector<TensorType> args = r.inputs, outs;
  for (int i = 0; i < r.numFills(); ++i) args.push_back(TensorType{DType::Float64, {}});
  for (int v : r.outputs) outs.push_back(r.ops.at(size_t(v) - r.inputs.size()).type);
  auto module = impl->buildModule(args, outs, [&](OpBuilder &b, Location loc, ValueRange in) {
    SmallVector<Value> values(in.begin(), in.begin() + long(r.inputs.size()));
    size_t fill = r.inputs.size();
    for (const RegionSpec::Op &op : r.ops) {
      SmallVector<Value> operands;
      if (op.code == OpCode::Full) operands.push_back(in[fill++]);
      for (int v : op.operands) operands.push_back(values[size_t(v)]);
      values.push_back(impl->createOp(b, loc, op.code, operands, op.attrs, op.type)->getResult(0));
    }
    SmallVector<Value> results;
    for (int v : r.outputs) results.push_back(values[size_t(v)]);
    return results;
  }, "a region of " + std::to_string(r.ops.size()) + " ops");
  return impl->compile(key, std::move(module), r.numArgs(), /*fuse=*/true);
}

const Kernel &KernelCompiler::getStridedCopy(DType dtype, int rank) {
  if (impl->cuda()) throw std::logic_error("strided copy kernels are built for the CPU target only");
  if (rank < 1) throw std::invalid_argument("a strided copy needs rank >= 1");
  std::string key = "strided_copy|" + std::to_string(int(dtype)) + "|" + std::to_string(rank);
  return impl->getOrCompile(key, [&]() -> const Kernel & {
    MLIRContext &ctx = impl->ctx;
    OpBuilder b(&ctx);
    Location loc = UnknownLoc::get(&ctx);
    OwningOpRef<ModuleOp> module = ModuleOp::create(loc);
    b.setInsertionPointToEnd(module->getBody());
    SmallVector<int64_t> dynamic(size_t(rank), ShapedType::kDynamic);
    auto layout = StridedLayoutAttr::get(&ctx, ShapedType::kDynamic, dynamic);
    auto view = MemRefType::get(dynamic, mlir::gt::toElementType(&ctx, dtype), layout);
    auto func = b.create<func::FuncOp>(loc, "kernel", b.getFunctionType({view, view}, {}));
    func->setAttr("llvm.emit_c_interface", b.getUnitAttr());
    b.setInsertionPointToStart(func.addEntryBlock());
    b.create<linalg::CopyOp>(loc, func.getArgument(0), func.getArgument(1));
    b.create<func::ReturnOp>(loc);
    if (failed(mlir::verify(*module))) throw std::runtime_error("the strided copy kernel does not verify");
    return impl->compile(key, std::move(module), 2, /*fuse=*/false);
  });
}

CompilerStats KernelCompiler::stats() const {
  std::lock_guard lock(impl->statsMu);
  return impl->stats;
}

} // namespace gt::worker
