// The GPU lowering pipeline (bufferized linalg -> gpu -> NVVM -> PTX inside gpu.binary), written
// once; workers with --device cuda:N and gt-opt --gt-gpu-pipeline both call it.
#include "gt/Dialect/Passes.h"

#include "mlir/Conversion/SCFToGPU/SCFToGPUPass.h"
#include "mlir/Dialect/Arith/Transforms/BufferizableOpInterfaceImpl.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Bufferization/Transforms/FuncBufferizableOpInterfaceImpl.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Linalg/Transforms/BufferizableOpInterfaceImpl.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/Transforms/BufferizableOpInterfaceImpl.h"
#include "mlir/Target/LLVMIR/Dialect/Builtin/BuiltinToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/LLVMIR/LLVMToLLVMIRTranslation.h"
#include "mlir/Dialect/Bufferization/Pipelines/Passes.h"
#include "mlir/Dialect/Bufferization/Transforms/OneShotAnalysis.h"
#include "mlir/Dialect/Bufferization/Transforms/Passes.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/GPU/Pipelines/Passes.h"
#include "mlir/Dialect/GPU/Transforms/Passes.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/Linalg/Passes.h"
#include "mlir/Dialect/SCF/Transforms/Passes.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Target/LLVM/NVVM/Target.h"
#include "mlir/Target/LLVMIR/Dialect/GPU/GPUToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/NVVM/NVVMToLLVMIRTranslation.h"
#include "mlir/Transforms/Passes.h"

namespace mlir::gt {

void buildGPUPipeline(OpPassManager &pm, const GPUPipelineOptions &options) {
  // 1. Every memory access becomes part of a parallel loop nest (copies, full reductions and
  //    0-d stores included), so nothing left on the host dereferences device memory.
  pm.addNestedPass<func::FuncOp>(createGTCopyToLinalg());
  //    Reductions first: block-parallel kernels (gpu.launch) of their own.
  pm.addNestedPass<func::FuncOp>(createGTGPUReductions(GTGPUReductionsOptions{options.blockSize}));
  pm.addNestedPass<func::FuncOp>(createConvertLinalgToParallelLoopsPass());
  // 2. Each loop nest -> blocks of `blockSize` threads -> gpu.launch -> outlined gpu.func.
  pm.addNestedPass<func::FuncOp>(createGTGPULoops(GTGPULoopsOptions{options.blockSize}));
  pm.addNestedPass<func::FuncOp>(createGpuMapParallelLoopsPass());
  pm.addNestedPass<func::FuncOp>(createParallelLoopToGpuPass());
  //    Constants (the sizes a collapsed index is divided by) into the launches, so that the
  //    kernels divide by immediates (multiply-shift) rather than by kernel arguments (div.s64,
  //    dozens of instructions per element and axis): outlining passes anything defined
  //    outside a launch as an argument.
  pm.addPass(createGpuLauchSinkIndexComputationsPass());
  pm.addPass(createGpuKernelOutliningPass());
  // Failed run-time checks (gt-lower-to-linalg's `checks`) as writes to a module global.
  pm.addNestedPass<gpu::GPUModuleOp>(createGTGPURuntimeErrors());
  // Inside the kernels (so their constants stay there): f32 math as polynomials, fma and
  // friends as LLVM intrinsics (convert-gpu-to-nvvm leaves math.fma alone).
  pm.addNestedPass<gpu::GPUModuleOp>(createGTApproximateMath(GTApproximateMathOptions{/*fmaToLLVM=*/true}));
  // 3. Host buffers -> gpu.alloc (the worker's caching allocator); refuse host memory access.
  pm.addPass(createGTGPUDeviceMemory());
  // gpu-to-llvm lowers only the async forms of gpu.alloc/dealloc: thread tokens through them
  // (and the launches). Every stream the host code asks for is the worker's compute stream.
  pm.addNestedPass<func::FuncOp>(createGpuAsyncRegionPass());
  pm.addPass(createCanonicalizerPass());
  pm.addPass(createCSEPass());
  // 4. MLIR's NVVM pipeline: kernels -> NVVM -> PTX (gpu.binary, format isa; the CUDA driver
  //    JIT-compiles it at load), host code -> LLVM dialect calling the mgpu* runtime.
  gpu::GPUToNVVMPipelineOptions nvvm;
  nvvm.cubinChip = options.chip;
  nvvm.cubinFeatures = options.features;
  nvvm.cubinFormat = "isa";
  nvvm.optLevel = 3;
  gpu::buildLowerToNVVMPassPipeline(pm, nvvm);
}

void registerGTGPUPipeline() {
  PassPipelineRegistration<>(
      "gt-gpu-pipeline",
      "linalg on tensors -> bufferized -> GPU kernels -> PTX in gpu.binary (what CUDA workers do to a kernel)",
      [](OpPassManager &pm) {
        bufferization::OneShotBufferizationOptions bufferize;
        bufferize.bufferizeFunctionBoundaries = true;
        bufferize.setFunctionBoundaryTypeConversion(bufferization::LayoutMapOption::IdentityLayoutMap);
        pm.addNestedPass<func::FuncOp>(createGTReshapesAsViews());
        pm.addPass(bufferization::createEmptyTensorEliminationPass());
        pm.addPass(bufferization::createOneShotBufferizePass(bufferize));
        bufferization::buildBufferDeallocationPipeline(pm, {});
        buildGPUPipeline(pm, {});
      });
}

void registerGTGPUDialects(DialectRegistry &registry) {
  registry.insert<gpu::GPUDialect, NVVM::NVVMDialect, bufferization::BufferizationDialect, memref::MemRefDialect,
                  scf::SCFDialect, LLVM::LLVMDialect>();
  arith::registerBufferizableOpInterfaceExternalModels(registry);
  bufferization::func_ext::registerBufferizableOpInterfaceExternalModels(registry);
  linalg::registerBufferizableOpInterfaceExternalModels(registry);
  tensor::registerBufferizableOpInterfaceExternalModels(registry);
  NVVM::registerNVVMTargetInterfaceExternalModels(registry);
  registerBuiltinDialectTranslation(registry);
  registerLLVMDialectTranslation(registry);
  registerGPUDialectTranslation(registry);
  gpu::registerOffloadingLLVMTranslationInterfaceExternalModels(registry);
  registerNVVMDialectTranslation(registry);
}

} // namespace mlir::gt
