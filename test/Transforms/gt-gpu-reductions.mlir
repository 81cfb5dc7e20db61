// RUN: gt-opt %s --pass-pipeline='builtin.module(func.func(gt-gpu-reductions))' | FileCheck %s
// batch_sum's input map after its loops are reordered (the batch axis is now the last loop):
// CHECK-DAG: affine_map<(d0, d1, d2) -> (d2, d0, d1)>

#rows = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d0)>
#col = affine_map<(d0, d1) -> (d1)>
#all = affine_map<(d0) -> (d0)>
#scalar = affine_map<(d0) -> ()>

// Row sums, 64 x 1000: one block per row (64 blocks of 256 threads); thread t sums elements
// t, t + 256, ... from 0.0; gpu.all_reduce adds the block's partials; thread 0 adds the total
// to the output's old value. No thread loops over the whole row.
// CHECK-LABEL: func.func @row_sums
// CHECK-NOT: linalg.generic
// CHECK-DAG: %[[C64:.*]] = arith.constant 64 : index
// CHECK-DAG: %[[C256:.*]] = arith.constant 256 : index
// CHECK: gpu.launch blocks(%[[B:[a-z0-9_]+]], %{{.*}}, %{{.*}}) in (%{{.*}} = %[[C64]], {{.*}}) threads(%[[T:[a-z0-9_]+]], %{{.*}}, %{{.*}}) in (%{{.*}} = %[[C256]],
// CHECK-DAG: %[[ZERO:[a-z0-9_]+]] = arith.constant 0.000000e+00 : f32
// CHECK-DAG: %[[END:[a-z0-9_]+]] = arith.constant 1000 : index
// CHECK: %[[START:[a-z0-9_]+]] = arith.addi %{{.*}}, %[[T]] : index
// CHECK: %[[P:[a-z0-9_]+]] = scf.for %[[J:[a-z0-9_]+]] = %[[START]] to %[[END]] step %{{.*}} iter_args(%[[A:[a-z0-9_]+]] = %[[ZERO]]) -> (f32) {
// CHECK:   %[[X:[a-z0-9_]+]] = memref.load %arg0[%[[B]], %[[J]]]
// CHECK:   %[[S:[a-z0-9_]+]] = arith.addf %[[X]], %[[A]] : f32
// CHECK:   scf.yield %[[S]]
// CHECK: %[[TOTAL:[a-z0-9_]+]] = gpu.all_reduce add %[[P]] uniform
// CHECK: %[[FIRST:[a-z0-9_]+]] = arith.cmpi eq, %[[T]], %{{.*}} : index
// CHECK: scf.if %[[FIRST]] {
// CHECK:   %[[OLD:[a-z0-9_]+]] = memref.load %arg1[%[[B]]]
// CHECK:   %[[NEW:[a-z0-9_]+]] = arith.addf %[[TOTAL]], %[[OLD]] : f32
// CHECK:   memref.store %[[NEW]], %arg1[%[[B]]]
// CHECK: gpu.terminator
func.func @row_sums(%x: memref<64x1000xf32>, %out: memref<64xf32>) {
  linalg.generic {indexing_maps = [#rows, #row], iterator_types = ["parallel", "reduction"]}
      ins(%x : memref<64x1000xf32>) outs(%out : memref<64xf32>) {
  ^bb0(%in: f32, %acc: f32):
    %s = arith.addf %in, %acc : f32
    linalg.yield %s : f32
  }
  return
}

// A full sum of 2^20 elements: one output, so its range is split over 512 blocks (2048
// elements each) writing partials to a temporary buffer; a second kernel (one block, 256
// threads) reduces the 512 partials into the output. The fused exp stays in the first kernel.
// CHECK-LABEL: func.func @full_sum
// CHECK: %[[PARTIALS:[a-z0-9_]+]] = memref.alloc() : memref<512xf32>
// CHECK: gpu.launch blocks({{.*}}) in (%{{.*}} = %c512{{.*}}) threads({{.*}}) in (%{{.*}} = %c256
// CHECK: arith.remui
// CHECK: arith.minui
// CHECK: scf.for
// CHECK: math.exp
// CHECK: arith.addf
// CHECK: gpu.all_reduce add
// CHECK: memref.store %{{.*}}, %[[PARTIALS]]
// CHECK: gpu.launch blocks({{.*}}) in (%{{.*}} = %c1{{.*}}) threads({{.*}}) in (%{{.*}} = %c256
// CHECK: scf.for
// CHECK: memref.load %[[PARTIALS]]
// CHECK: gpu.all_reduce add
// CHECK: memref.load %arg1[]
// CHECK: memref.store %{{.*}}, %arg1[]
// CHECK: memref.dealloc %[[PARTIALS]]
func.func @full_sum(%x: memref<1048576xf32>, %out: memref<f32>) {
  linalg.generic {indexing_maps = [#all, #scalar], iterator_types = ["reduction"]}
      ins(%x : memref<1048576xf32>) outs(%out : memref<f32>) {
  ^bb0(%in: f32, %acc: f32):
    %e = math.exp %in : f32
    %s = arith.addf %e, %acc : f32
    linalg.yield %s : f32
  }
  return
}

// Column maxima (a reduction over the outer axis): 600 outputs, no split; the reduced size
// (100) rounds up to 128 threads; the partials start from -inf; linalg.index becomes the
// element's loop index.
// CHECK-LABEL: func.func @column_max
// CHECK: gpu.launch blocks(%[[B:[a-z0-9_]+]], %{{.*}}, %{{.*}}) in (%{{.*}} = %c600{{.*}}) threads({{.*}}) in (%{{.*}} = %c128
// CHECK-DAG: arith.constant 0xFF800000 : f32
// CHECK: scf.for %[[I:[a-z0-9_]+]] =
// CHECK: memref.load %arg0[%[[I]], %[[B]]]
// CHECK: arith.index_cast %[[I]]
// CHECK: arith.maximumf
// CHECK: gpu.all_reduce maximumf
func.func @column_max(%x: memref<100x600xf32>, %out: memref<600xf32>) {
  linalg.generic {indexing_maps = [#rows, #col], iterator_types = ["reduction", "parallel"]}
      ins(%x : memref<100x600xf32>) outs(%out : memref<600xf32>) {
  ^bb0(%in: f32, %acc: f32):
    %i = linalg.index 0 : index
    %ii = arith.index_cast %i : index to i32
    %fi = arith.sitofp %ii : i32 to f32
    %v = arith.mulf %in, %fi : f32
    %m = arith.maximumf %v, %acc : f32
    linalg.yield %m : f32
  }
  return
}

// Left as they were (one thread per output, a loop over the reduced axis):
// a short axis (16 < min-reduced), a bf16 sum into a bf16 output (GT's lowering sums 16-bit
// floats into f32 outputs; warp shuffles move 32 and 64 bits), a body whose combine is not
// associative (subf), and argmax's two outputs.
// CHECK-LABEL: func.func @kept
// CHECK-NOT: gpu.launch
// CHECK-COUNT-4: linalg.generic
// CHECK-NOT: gpu.launch
func.func @kept(%short: memref<64x16xf32>, %out: memref<64xf32>, %h: memref<64x100xbf16>, %hout: memref<64xbf16>,
                %x: memref<64x100xf32>, %idx: memref<64xi64>) {
  linalg.generic {indexing_maps = [#rows, #row], iterator_types = ["parallel", "reduction"]}
      ins(%short : memref<64x16xf32>) outs(%out : memref<64xf32>) {
  ^bb0(%in: f32, %acc: f32):
    %s = arith.addf %in, %acc : f32
    linalg.yield %s : f32
  }
  linalg.generic {indexing_maps = [#rows, #row], iterator_types = ["parallel", "reduction"]}
      ins(%h : memref<64x100xbf16>) outs(%hout : memref<64xbf16>) {
  ^bb0(%in: bf16, %acc: bf16):
    %s = arith.addf %in, %acc : bf16
    linalg.yield %s : bf16
  }
  linalg.generic {indexing_maps = [#rows, #row], iterator_types = ["parallel", "reduction"]}
      ins(%x : memref<64x100xf32>) outs(%out : memref<64xf32>) {
  ^bb0(%in: f32, %acc: f32):
    %s = arith.subf %acc, %in : f32
    linalg.yield %s : f32
  }
  linalg.generic {indexing_maps = [#rows, #row, #row], iterator_types = ["parallel", "reduction"]}
      ins(%x : memref<64x100xf32>) outs(%out, %idx : memref<64xf32>, memref<64xi64>) {
  ^bb0(%in: f32, %best: f32, %at: i64):
    %j = linalg.index 1 : index
    %ji = arith.index_cast %j : index to i64
    %gt = arith.cmpf ogt, %in, %best : f32
    %m = arith.select %gt, %in, %best : f32
    %k = arith.select %gt, %ji, %at : i64
    linalg.yield %m, %k : f32, i64
  }
  return
}

// A bf16 row max (softmax's first reduction under autocast): the threads compare in f32 (exact),
// the block's maximum is rounded back to bf16 (exactly) when stored.
// CHECK-LABEL: func.func @half_max
// CHECK: gpu.launch
// CHECK: memref.load {{.*}} : memref<64x1000xbf16>
// CHECK: arith.extf {{.*}} : bf16 to f32
// CHECK: arith.maximumf {{.*}} : f32
// CHECK: gpu.all_reduce maximumf
// CHECK: arith.truncf {{.*}} : f32 to bf16
// CHECK: memref.store {{.*}} : memref<64xbf16>
func.func @half_max(%h: memref<64x1000xbf16>, %hout: memref<64xbf16>) {
  linalg.generic {indexing_maps = [#rows, #row], iterator_types = ["parallel", "reduction"]}
      ins(%h : memref<64x1000xbf16>) outs(%hout : memref<64xbf16>) {
  ^bb0(%in: bf16, %acc: bf16):
    %m = arith.maximumf %in, %acc : bf16
    linalg.yield %m : bf16
  }
  return
}

// A short reduction over an outer axis (a bias gradient summed over a batch of 8: too few
// elements per output for a block) stays a linalg.generic, its loops reordered parallel first,
// so that each output gets a thread instead of one thread looping over the whole nest.
// CHECK-LABEL: func.func @batch_sum
// CHECK-NOT: gpu.launch
// CHECK: linalg.generic {indexing_maps = [#[[IN:map[0-9]*]], #[[OUT:map[0-9]*]]], iterator_types = ["parallel", "parallel", "reduction"]}
// CHECK-NOT: gpu.launch
#batch_in = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
#batch_out = affine_map<(d0, d1, d2) -> (d1, d2)>
func.func @batch_sum(%x: memref<8x64x32xf32>, %out: memref<64x32xf32>) {
  linalg.generic {indexing_maps = [#batch_in, #batch_out], iterator_types = ["reduction", "parallel", "parallel"]}
      ins(%x : memref<8x64x32xf32>) outs(%out : memref<64x32xf32>) {
  ^bb0(%in: f32, %acc: f32):
    %s = arith.addf %in, %acc : f32
    linalg.yield %s : f32
  }
  return
}

// keepdims (softmax's `x.sum(-1, keepdim=True)`): the kept axis is index 0 of the output.
// CHECK-LABEL: func.func @keepdims
// CHECK: gpu.launch blocks(%[[B:[a-z0-9_]+]], %{{.*}}, %{{.*}}) in (%{{.*}} = %c64{{.*}})
// CHECK: gpu.all_reduce add
// CHECK: memref.store %{{.*}}, %arg1[%[[B]], %{{.*}}] : memref<64x1xf32>
func.func @keepdims(%x: memref<64x100xf32>, %out: memref<64x1xf32>) {
  linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, 0)>],
                  iterator_types = ["parallel", "reduction"]}
      ins(%x : memref<64x100xf32>) outs(%out : memref<64x1xf32>) {
  ^bb0(%in: f32, %acc: f32):
    %s = arith.addf %in, %acc : f32
    linalg.yield %s : f32
  }
  return
}
