// RUN: gt-opt %s --pass-pipeline='builtin.module(func.func(gt-cpu-reductions))' | FileCheck %s
// (The maps print at the top: @channel_sums' interchanged ones, checked here.)
// CHECK-DAG: #[[$IN:.*]] = affine_map<(d0, d1, d2, d3) -> (d1, d0, d2, d3)>
// CHECK-DAG: #[[$OUT:.*]] = affine_map<(d0, d1, d2, d3) -> (d0)>

#rows = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d0)>
#col = affine_map<(d0, d1) -> (d1)>
#all = affine_map<(d0) -> (d0)>
#scalar = affine_map<(d0) -> ()>

// Softmax's sum of exp(x - max) per row, sizes dynamic (an eager kernel): for each row, 8
// partials in a vector over the largest multiple of 8 columns (x loaded 8 at a time, the row's
// max broadcast, the exp on vectors), the lanes folded in order 0..7, the other columns one at a
// time, then added to the output.
// CHECK-LABEL: func.func @row_sums
// CHECK: %[[ROWS:.*]] = memref.dim %arg0, %c0
// CHECK: %[[COLS:.*]] = memref.dim %arg0, %c1
// CHECK: scf.parallel (%[[I:[a-z0-9_]+]]) = (%{{.*}}) to (%[[ROWS]])
// CHECK: %[[REM:.*]] = arith.remui %[[COLS]], %[[C8:.*]] : index
// CHECK: %[[MAIN:.*]] = arith.subi %[[COLS]], %[[REM]] : index
// CHECK: %[[ZEROS:.*]] = arith.constant dense<0.000000e+00> : vector<8xf32>
// CHECK: %[[V:.*]] = scf.for %[[J:[a-z0-9_]+]] = %{{.*}} to %[[MAIN]] step %[[C8]] iter_args(%[[ACC:[a-z0-9_]+]] = %[[ZEROS]]) -> (vector<8xf32>)
// CHECK:   %[[X:.*]] = vector.load %arg0[%[[I]], %[[J]]] : memref<?x?xf32>, vector<8xf32>
// CHECK:   %[[M:.*]] = memref.load %arg1[%[[I]]]
// CHECK:   %[[MV:.*]] = vector.broadcast %[[M]] : f32 to vector<8xf32>
// CHECK:   %[[D:.*]] = arith.subf %[[X]], %[[MV]] : vector<8xf32>
// CHECK:   %[[E:.*]] = math.exp %[[D]] : vector<8xf32>
// CHECK:   %[[S:.*]] = arith.addf %[[E]], %[[ACC]] : vector<8xf32>
// CHECK:   scf.yield %[[S]]
// CHECK: %[[L0:.*]] = vector.extract %[[V]][0]
// CHECK: %[[T0:.*]] = arith.addf %[[L0]], %{{.*}} : f32
// CHECK: %[[L1:.*]] = vector.extract %[[V]][1]
// CHECK: %[[T1:.*]] = arith.addf %[[L1]], %[[T0]] : f32
// CHECK: vector.extract %[[V]][7]
// CHECK: %[[TAIL:.*]] = scf.for %{{.*}} = %[[MAIN]] to %[[COLS]] step %{{.*}} iter_args
// CHECK:   memref.load %arg0
// CHECK:   math.exp %{{.*}} : f32
// CHECK: %[[OLD:.*]] = memref.load %arg2[%[[I]]]
// CHECK: %[[NEW:.*]] = arith.addf %[[TAIL]], %[[OLD]] : f32
// CHECK: memref.store %[[NEW]], %arg2[%[[I]]]
func.func @row_sums(%x: memref<?x?xf32>, %m: memref<?xf32>, %out: memref<?xf32>) {
  linalg.generic {indexing_maps = [#rows, #row, #row], iterator_types = ["parallel", "reduction"]}
      ins(%x, %m : memref<?x?xf32>, memref<?xf32>) outs(%out : memref<?xf32>) {
  ^bb0(%in: f32, %mx: f32, %acc: f32):
    %d = arith.subf %in, %mx : f32
    %e = math.exp %d : f32
    %r = arith.addf %e, %acc : f32
    linalg.yield %r : f32
  }
  return
}

// A full max with a constant in the body: no parallel loop, partials from -inf, the constant
// splat.
// CHECK-LABEL: func.func @full_max
// CHECK-NOT: scf.parallel
// CHECK: arith.constant dense<0xFF800000> : vector<8xf32>
// CHECK: scf.for
// CHECK: vector.load %arg0
// CHECK: vector.broadcast
// CHECK: arith.maximumf %{{.*}} : vector<8xf32>
// CHECK: memref.store %{{.*}}, %arg1[]
func.func @full_max(%x: memref<1000xf32>, %out: memref<f32>) {
  linalg.generic {indexing_maps = [#all, #scalar], iterator_types = ["reduction"]}
      ins(%x : memref<1000xf32>) outs(%out : memref<f32>) {
  ^bb0(%in: f32, %acc: f32):
    %k = arith.constant 1.0 : f32
    %y = arith.addf %in, %k : f32
    %r = arith.maximumf %y, %acc : f32
    linalg.yield %r : f32
  }
  return
}

// Left as they are: a reduction over the outer axis (its rows vectorize as they are) and a body
// reading linalg.index.
// CHECK-LABEL: func.func @kept
// CHECK-NOT: vector.
// CHECK-COUNT-2: linalg.generic
// CHECK-NOT: vector.
func.func @kept(%x: memref<100x64xf32>, %cols: memref<64xf32>, %rows: memref<64xf32>, %y: memref<64x100xf32>) {
  linalg.generic {indexing_maps = [#rows, #col], iterator_types = ["reduction", "parallel"]}
      ins(%x : memref<100x64xf32>) outs(%cols : memref<64xf32>) {
  ^bb0(%in: f32, %acc: f32):
    %s = arith.addf %in, %acc : f32
    linalg.yield %s : f32
  }
  linalg.generic {indexing_maps = [#rows, #row], iterator_types = ["parallel", "reduction"]}
      ins(%y : memref<64x100xf32>) outs(%rows : memref<64xf32>) {
  ^bb0(%in: f32, %acc: f32):
    %j = linalg.index 1 : index
    %ji = arith.index_cast %j : index to i32
    %f = arith.sitofp %ji : i32 to f32
    %v = arith.mulf %in, %f : f32
    %s = arith.addf %v, %acc : f32
    linalg.yield %s : f32
  }
  return
}

// An input strided along the reduced axis (a transposed view): its 8 elements of a vector loaded
// one at a time, the same partials as for a contiguous row (an eager sum of the copied
// transpose agrees bit for bit).
// CHECK-LABEL: func.func @strided_rows
// CHECK: scf.parallel (%[[I:[a-z0-9_]+]])
// CHECK: scf.for %[[J:[a-z0-9_]+]] = {{.*}} -> (vector<8xf32>)
// CHECK:   memref.load %arg0[%[[I]], %{{.*}}] : memref<64x100xf32, strided<[1, 64]>>
// CHECK:   vector.insert %{{.*}}, %{{.*}} [0] : f32 into vector<8xf32>
// CHECK:   vector.insert %{{.*}}, %{{.*}} [7] : f32 into vector<8xf32>
// CHECK:   arith.addf %{{.*}} : vector<8xf32>
func.func @strided_rows(%t: memref<64x100xf32, strided<[1, 64]>>, %rows: memref<64xf32>) {
  linalg.generic {indexing_maps = [#rows, #row], iterator_types = ["parallel", "reduction"]}
      ins(%t : memref<64x100xf32, strided<[1, 64]>>) outs(%rows : memref<64xf32>) {
  ^bb0(%in: f32, %acc: f32):
    %s = arith.addf %in, %acc : f32
    linalg.yield %s : f32
  }
  return
}

// keepdims: the output (and the row's max) indexed with a constant 0 for the kept axis.
// CHECK-LABEL: func.func @keepdims
// CHECK: scf.parallel (%[[I:[a-z0-9_]+]]) =
// CHECK: vector.load %arg0[%[[I]], %{{.*}}] : memref<64x100xf32>, vector<8xf32>
// CHECK: memref.load %arg1[%[[I]], %[[Z:.*]]] : memref<64x1xf32>
// CHECK: memref.store %{{.*}}, %arg2[%[[I]], %{{.*}}] : memref<64x1xf32>
func.func @keepdims(%x: memref<64x100xf32>, %m: memref<64x1xf32>, %out: memref<64x1xf32>) {
  linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, 0)>,
                                   affine_map<(d0, d1) -> (d0, 0)>], iterator_types = ["parallel", "reduction"]}
      ins(%x, %m : memref<64x100xf32>, memref<64x1xf32>) outs(%out : memref<64x1xf32>) {
  ^bb0(%in: f32, %mx: f32, %acc: f32):
    %d = arith.subf %in, %mx : f32
    %e = math.exp %d : f32
    %r = arith.addf %e, %acc : f32
    linalg.yield %r : f32
  }
  return
}

// A mask along the reduced axis: a vector<8xi1> is 8 bits in memory, a memref's i1 a byte each,
// so its lanes are loaded one at a time and inserted; the floats still come in one vector load.
// CHECK-LABEL: func.func @masked
// CHECK: scf.for
// CHECK: vector.load %arg0
// CHECK-NOT: vector.load %arg1
// CHECK: memref.load %arg1
// CHECK: vector.insert %{{.*}}, %{{.*}} [0] : i1 into vector<8xi1>
// CHECK: vector.insert %{{.*}}, %{{.*}} [7] : i1 into vector<8xi1>
// CHECK: arith.select %{{.*}} : vector<8xi1>, vector<8xf32>
func.func @masked(%x: memref<64x100xf32>, %m: memref<64x100xi1>, %out: memref<64xf32>) {
  %zero = arith.constant 0.0 : f32
  linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>,
                                   affine_map<(d0, d1) -> (d0)>], iterator_types = ["parallel", "reduction"]}
      ins(%x, %m : memref<64x100xf32>, memref<64x100xi1>) outs(%out : memref<64xf32>) {
  ^bb0(%in: f32, %keep: i1, %acc: f32):
    %v = arith.select %keep, %in, %zero : f32
    %r = arith.addf %v, %acc : f32
    linalg.yield %r : f32
  }
  return
}

// A full sum of a 4-D tensor with a scalar added to each element (`(x + 1).sum()`): the four
// reduction dimensions are one, 524288 elements, read through memref.collapse_shape. With no
// kept dimension and at least two blocks of 8192 elements, the 64 blocks are an scf.parallel
// (gt-cpu-parallel-loops puts it on the threads), each block's partials from zero into a
// buffer; then on one thread the blocks' partials in order, the elements after the last whole
// block (none here), the lanes in order, the tail.
// CHECK-LABEL: func.func @full_sum_4d
// CHECK: %[[FLAT:.*]] = memref.collapse_shape %arg0 {{\[}}[0, 1, 2, 3]] : memref<32x4x64x64xf32> into memref<524288xf32>
// CHECK: %[[P:.*]] = memref.alloc(%c64) : memref<?xvector<8xf32>>
// CHECK: scf.parallel (%[[B:[a-z0-9_]+]]) = (%{{.*}}) to (%c64)
// CHECK:   %[[START:.*]] = arith.muli %[[B]], %c8192
// CHECK:   %[[BLOCK:.*]] = scf.for %[[I:[a-z0-9_]+]] = %{{.*}} to %c8192 step %c8 iter_args
// CHECK:     %[[F:.*]] = arith.addi %[[START]], %[[I]]
// CHECK:     vector.load %[[FLAT]][%[[F]]]
// CHECK:   memref.store %[[BLOCK]], %[[P]][%[[B]]]
// CHECK: %[[ALL:.*]] = scf.for %[[J:[a-z0-9_]+]] = %{{.*}} to %c64 {{.*}} -> (vector<8xf32>)
// CHECK:   memref.load %[[P]][%[[J]]]
// CHECK: scf.for {{.*}} iter_args(%{{.*}} = %[[ALL]])
// CHECK: memref.dealloc %[[P]]
// CHECK: vector.extract %{{.*}}[7]
// CHECK: memref.store %{{.*}}, %arg2[]
// CHECK-NOT: linalg.generic
func.func @full_sum_4d(%x: memref<32x4x64x64xf32>, %c: memref<f32>, %out: memref<f32>) {
  linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>, affine_map<(d0, d1, d2, d3) -> ()>,
                                   affine_map<(d0, d1, d2, d3) -> ()>],
                  iterator_types = ["reduction", "reduction", "reduction", "reduction"]}
      ins(%x, %c : memref<32x4x64x64xf32>, memref<f32>) outs(%out : memref<f32>) {
  ^bb0(%in: f32, %k: f32, %acc: f32):
    %y = arith.addf %in, %k : f32
    %r = arith.addf %y, %acc : f32
    linalg.yield %r : f32
  }
  return
}

// An eager kernel's full sum (its size known at run time): always the blocks' form, with as
// many blocks as the size gives (none below 8192 elements: then the loop after the blocks does
// it all, in reduceOne's order).
// CHECK-LABEL: func.func @dynamic_full_sum
// CHECK: %[[N:.*]] = memref.dim %arg0
// CHECK: %[[MAIN:.*]] = arith.subi %[[N]], %{{.*}} : index
// CHECK: %[[BLOCKS:.*]] = arith.divui %[[MAIN]], %c8192 : index
// CHECK: memref.alloc(%[[BLOCKS]])
// CHECK: scf.parallel (%{{.*}}) = (%{{.*}}) to (%[[BLOCKS]])
func.func @dynamic_full_sum(%x: memref<?xf32>, %out: memref<f32>) {
  linalg.generic {indexing_maps = [#all, #scalar], iterator_types = ["reduction"]}
      ins(%x : memref<?xf32>) outs(%out : memref<f32>) {
  ^bb0(%in: f32, %acc: f32):
    %r = arith.addf %in, %acc : f32
    linalg.yield %r : f32
  }
  return
}

// Dynamic sizes (an eager kernel): a sum over the last two of three dimensions, each outer
// index's plane collapsed to one row; the per-plane scale is a broadcast.
// CHECK-LABEL: func.func @planes
// CHECK: %[[P:.*]] = memref.collapse_shape %arg0 {{\[}}[0], [1, 2]] : memref<?x?x?xf32> into memref<?x?xf32>
// CHECK: scf.parallel (%[[I:[a-z0-9_]+]])
// CHECK: vector.load %[[P]][%[[I]], %{{.*}}] : memref<?x?xf32>, vector<8xf32>
// CHECK: memref.load %arg1[%[[I]]]
func.func @planes(%x: memref<?x?x?xf32>, %s: memref<?xf32>, %out: memref<?xf32>) {
  linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d1, d2)>, affine_map<(d0, d1, d2) -> (d0)>,
                                   affine_map<(d0, d1, d2) -> (d0)>],
                  iterator_types = ["parallel", "reduction", "reduction"]}
      ins(%x, %s : memref<?x?x?xf32>, memref<?xf32>) outs(%out : memref<?xf32>) {
  ^bb0(%in: f32, %k: f32, %acc: f32):
    %y = arith.mulf %in, %k : f32
    %r = arith.addf %y, %acc : f32
    linalg.yield %r : f32
  }
  return
}

// Not collapsed: the reduced dimensions are not contiguous in the input (every other row of a
// larger buffer), or are read in another order (a transposed view). The innermost loop's length
// is a multiple of 8, so each vector holds 8 consecutive elements in the flat order of the
// reduced loops (as in a collapsed row): a loop over the rows carries the partials into a vector
// loop over the columns, and no element is left for a tail.
// CHECK-LABEL: func.func @not_collapsed
// CHECK-NOT: memref.collapse_shape
// CHECK: %[[P:.*]] = scf.for %[[I:[a-z0-9_]+]] = {{.*}} iter_args(%[[A:[a-z0-9_]+]] = {{.*}}) -> (vector<8xf32>)
// CHECK:   scf.for %[[J:[a-z0-9_]+]] = {{.*}} step %c8 iter_args(%{{.*}} = %[[A]]) -> (vector<8xf32>)
// CHECK:     vector.load %arg0[%[[I]], %[[J]]] : memref<16x64xf32, strided<[128, 1]>>, vector<8xf32>
// CHECK: vector.extract %[[P]][7]
// CHECK-NOT: scf.for
// CHECK: memref.store %{{.*}}, %arg2[]
// CHECK: scf.for
// CHECK:   scf.for
// CHECK:     memref.load %arg1[%{{.*}}, %{{.*}}] : memref<16x64xf32>
// CHECK:     vector.insert %{{.*}} [7] : f32 into vector<8xf32>
// CHECK-NOT: linalg.generic
func.func @not_collapsed(%x: memref<16x64xf32, strided<[128, 1]>>, %y: memref<16x64xf32>, %out: memref<f32>) {
  linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> ()>],
                  iterator_types = ["reduction", "reduction"]}
      ins(%x : memref<16x64xf32, strided<[128, 1]>>) outs(%out : memref<f32>) {
  ^bb0(%in: f32, %acc: f32):
    %r = arith.addf %in, %acc : f32
    linalg.yield %r : f32
  }
  linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d1, d0)>, affine_map<(d0, d1) -> ()>],
                  iterator_types = ["reduction", "reduction"]}
      ins(%y : memref<16x64xf32>) outs(%out : memref<f32>) {
  ^bb0(%in: f32, %acc: f32):
    %r = arith.addf %in, %acc : f32
    linalg.yield %r : f32
  }
  return
}

// A full sum of `x + b` with the bias broadcast over the rows (a fused region): not collapsible
// (b reads only the columns), vectorized as @not_collapsed, b loaded 8 columns at a time.
// CHECK-LABEL: func.func @bias_full_sum
// CHECK: scf.for %[[I:[a-z0-9_]+]] = {{.*}} -> (vector<8xf32>)
// CHECK:   scf.for %[[J:[a-z0-9_]+]] = {{.*}} -> (vector<8xf32>)
// CHECK:     vector.load %arg0[%[[I]], %[[J]]] : memref<8x512xf32>, vector<8xf32>
// CHECK:     vector.load %arg1[%[[J]]] : memref<512xf32>, vector<8xf32>
// CHECK:     math.exp %{{.*}} : vector<8xf32>
func.func @bias_full_sum(%x: memref<8x512xf32>, %b: memref<512xf32>, %out: memref<f32>) {
  linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d1)>,
                                   affine_map<(d0, d1) -> ()>], iterator_types = ["reduction", "reduction"]}
      ins(%x, %b : memref<8x512xf32>, memref<512xf32>) outs(%out : memref<f32>) {
  ^bb0(%in: f32, %bias: f32, %acc: f32):
    %y = arith.addf %in, %bias : f32
    %e = math.exp %y : f32
    %r = arith.addf %e, %acc : f32
    linalg.yield %r : f32
  }
  return
}

// The same over (2048, 512), 128 blocks: each vector's row and column from its flat index.
// CHECK-LABEL: func.func @blocked_bias_full_sum
// CHECK: scf.parallel (%[[B:[a-z0-9_]+]]) = (%{{.*}}) to (%c128)
// CHECK:   scf.for %[[I:[a-z0-9_]+]] = %{{.*}} to %c8192 step %c8
// CHECK:     %[[F:.*]] = arith.addi %{{.*}}, %[[I]] : index
// CHECK:     %[[COL:.*]] = arith.remui %[[F]], %c512 : index
// CHECK:     %[[ROW:.*]] = arith.divui %[[F]], %c512 : index
// CHECK:     vector.load %arg0[%[[ROW]], %[[COL]]] : memref<2048x512xf32>, vector<8xf32>
// CHECK:     vector.load %arg1[%[[COL]]] : memref<512xf32>, vector<8xf32>
func.func @blocked_bias_full_sum(%x: memref<2048x512xf32>, %b: memref<512xf32>, %out: memref<f32>) {
  linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d1)>,
                                   affine_map<(d0, d1) -> ()>], iterator_types = ["reduction", "reduction"]}
      ins(%x, %b : memref<2048x512xf32>, memref<512xf32>) outs(%out : memref<f32>) {
  ^bb0(%in: f32, %bias: f32, %acc: f32):
    %y = arith.addf %in, %bias : f32
    %r = arith.addf %y, %acc : f32
    linalg.yield %r : f32
  }
  return
}

// The same with 5 columns: a vector would span two rows, so the elements go one at a time
// into the lane of their flat index (the lane index and the flat index carried along), the
// lanes fold in order, and the last 35 mod 8 = 3 elements (flat indices 32..34, back to row and
// column by division) are added after them: the order of a collapsed row of 35 elements.
// CHECK-LABEL: func.func @odd_full_sum
// CHECK: %[[COUNT:.*]] = arith.muli %{{.*}}, %c5 : index
// CHECK: %[[MAIN:.*]] = arith.subi %[[COUNT]], %{{.*}} : index
// CHECK: scf.for {{.*}} -> (vector<8xf32>, index, index)
// CHECK:   scf.for {{.*}} iter_args(%[[ACC:[a-z0-9_]+]] = %{{.*}}, %[[LANE:[a-z0-9_]+]] = %{{.*}}, %[[F:[a-z0-9_]+]] = %{{.*}}) -> (vector<8xf32>, index, index)
// CHECK:     %[[OLD:.*]] = vector.extractelement %[[ACC]][%[[LANE]] : index]
// CHECK:     %[[NEW:.*]] = arith.addf %{{.*}}, %[[OLD]] : f32
// CHECK:     %[[INS:.*]] = vector.insertelement %[[NEW]], %[[ACC]][%[[LANE]] : index]
// CHECK:     %[[IN_MAIN:.*]] = arith.cmpi ult, %[[F]], %[[MAIN]] : index
// CHECK:     arith.select %[[IN_MAIN]], %[[INS]], %[[ACC]] : vector<8xf32>
// CHECK: scf.for %[[T:[a-z0-9_]+]] = %[[MAIN]] to %[[COUNT]]
// CHECK:   %[[COL:.*]] = arith.remui %[[T]], %c5 : index
// CHECK:   %[[ROW:.*]] = arith.divui %[[T]], %c5 : index
// CHECK: memref.store %{{.*}}, %arg2[]
func.func @odd_full_sum(%x: memref<7x5xf32>, %b: memref<5xf32>, %out: memref<f32>) {
  linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d1)>,
                                   affine_map<(d0, d1) -> ()>], iterator_types = ["reduction", "reduction"]}
      ins(%x, %b : memref<7x5xf32>, memref<5xf32>) outs(%out : memref<f32>) {
  ^bb0(%in: f32, %bias: f32, %acc: f32):
    %y = arith.addf %in, %bias : f32
    %r = arith.addf %y, %acc : f32
    linalg.yield %r : f32
  }
  return
}

#nchw = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
#chan = affine_map<(d0, d1, d2, d3) -> (d1)>
#nhwc = affine_map<(d0, d1) -> (d0, d1)>
#col2 = affine_map<(d0, d1) -> (d1)>

// Batch norm's per-channel sum of (N, C, H, W) over N, H and W: the innermost loop reduces but
// the outermost does too, so the channel loop moves outermost (a parallel loop for
// gt-cpu-parallel-loops) and N, H, W follow in order: each channel still adds its elements in
// the same order. Left as they are: a column sum (innermost loop kept: it reads rows), and a
// reduction whose innermost reduced loops are short (4 x 2) or of unknown length (an eager kernel).
// CHECK-LABEL: func.func @channel_sums
// CHECK: linalg.generic {indexing_maps = [#[[$IN]], #[[$OUT]]], iterator_types = ["parallel", "reduction", "reduction", "reduction"]} ins(%arg0 : memref<2x3x4x16xf32>) outs(%arg1 : memref<3xf32>)
// CHECK: linalg.generic {{.*}} iterator_types = ["reduction", "parallel"]} ins(%arg2 : memref<6x3xf32>) outs(%arg3 : memref<3xf32>)
// CHECK: linalg.generic {{.*}} iterator_types = ["reduction", "parallel", "reduction", "reduction"]} ins(%arg4 : memref<2x3x4x2xf32>)
// CHECK: linalg.generic {{.*}} iterator_types = ["reduction", "parallel", "reduction", "reduction"]} ins(%arg6 : memref<?x3x4x?xf32>)
func.func @channel_sums(%x: memref<2x3x4x16xf32>, %s: memref<3xf32>, %y: memref<6x3xf32>, %t: memref<3xf32>,
                        %p: memref<2x3x4x2xf32>, %ps: memref<3xf32>, %d: memref<?x3x4x?xf32>, %ds: memref<3xf32>) {
  linalg.generic {indexing_maps = [#nchw, #chan], iterator_types = ["reduction", "parallel", "reduction", "reduction"]}
      ins(%x : memref<2x3x4x16xf32>) outs(%s : memref<3xf32>) {
  ^bb0(%in: f32, %acc: f32):
    %r = arith.addf %in, %acc : f32
    linalg.yield %r : f32
  }
  linalg.generic {indexing_maps = [#nhwc, #col2], iterator_types = ["reduction", "parallel"]}
      ins(%y : memref<6x3xf32>) outs(%t : memref<3xf32>) {
  ^bb0(%in: f32, %acc: f32):
    %r = arith.addf %in, %acc : f32
    linalg.yield %r : f32
  }
  linalg.generic {indexing_maps = [#nchw, #chan], iterator_types = ["reduction", "parallel", "reduction", "reduction"]}
      ins(%p : memref<2x3x4x2xf32>) outs(%ps : memref<3xf32>) {
  ^bb0(%in: f32, %acc: f32):
    %r = arith.addf %in, %acc : f32
    linalg.yield %r : f32
  }
  linalg.generic {indexing_maps = [#nchw, #chan], iterator_types = ["reduction", "parallel", "reduction", "reduction"]}
      ins(%d : memref<?x3x4x?xf32>) outs(%ds : memref<3xf32>) {
  ^bb0(%in: f32, %acc: f32):
    %r = arith.addf %in, %acc : f32
    linalg.yield %r : f32
  }
  return
}

// A 1x1 operand (`(x + s).mean()` with s of shape (1, 1)) reads indices (0, 0): after the two
// reduced dimensions collapse into one loop it has more indices than loops, and is still a
// broadcast (before, it kept the whole sum scalar, in another order than the eager kernels').
// CHECK-LABEL: func.func @one_by_one
// CHECK: %[[FLAT:.*]] = memref.collapse_shape %arg0
// CHECK: scf.for
// CHECK:   vector.load %[[FLAT]]
// CHECK:   memref.load %arg1[%{{.*}}, %{{.*}}] : memref<1x1xf32>
// CHECK:   vector.broadcast
func.func @one_by_one(%x: memref<6x5xf32>, %s: memref<1x1xf32>, %out: memref<f32>) {
  linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (0, 0)>,
                                   affine_map<(d0, d1) -> ()>], iterator_types = ["reduction", "reduction"]}
      ins(%x, %s : memref<6x5xf32>, memref<1x1xf32>) outs(%out : memref<f32>) {
  ^bb0(%in: f32, %k: f32, %acc: f32):
    %y = arith.addf %in, %k : f32
    %r = arith.addf %y, %acc : f32
    linalg.yield %r : f32
  }
  return
}
