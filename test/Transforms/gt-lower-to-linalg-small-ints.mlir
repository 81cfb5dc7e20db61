// RUN: gt-opt %s --gt-lower-to-linalg | FileCheck %s

// uint8 is ui8 in the gt dialect: arith takes signless integers only, so a cast reads its bits
// as an i8 (an unrealized cast) and widens them without a sign; to uint8, the other way.
// CHECK-LABEL: func.func @from_uint8
// CHECK: ^bb0(%[[IN:.*]]: ui8, %{{.*}}: f32):
// CHECK: %[[BITS:.*]] = builtin.unrealized_conversion_cast %[[IN]] : ui8 to i8
// CHECK: %[[WIDE:.*]] = arith.extui %[[BITS]] : i8 to i32
// CHECK: arith.sitofp %[[WIDE]] : i32 to f32
func.func @from_uint8(%a: tensor<3xui8>) -> tensor<3xf32> {
  %0 = gt.cast %a : tensor<3xui8> -> tensor<3xf32>
  return %0 : tensor<3xf32>
}

// A float narrows to 8 bits through int32 (fptosi to i8 of 200.0 would be poison).
// CHECK-LABEL: func.func @to_uint8
// CHECK: %[[I:.*]] = arith.fptosi %{{.*}} : f32 to i32
// CHECK: %[[T:.*]] = arith.trunci %[[I]] : i32 to i8
// CHECK: builtin.unrealized_conversion_cast %[[T]] : i8 to ui8
func.func @to_uint8(%a: tensor<3xf32>) -> tensor<3xui8> {
  %0 = gt.cast %a : tensor<3xf32> -> tensor<3xui8>
  return %0 : tensor<3xui8>
}

// int8 is a signless i8: it widens with its sign.
// CHECK-LABEL: func.func @from_int8
// CHECK: arith.extsi %{{.*}} : i8 to i64
func.func @from_int8(%a: tensor<3xi8>) -> tensor<3xi64> {
  %0 = gt.cast %a : tensor<3xi8> -> tensor<3xi64>
  return %0 : tensor<3xi64>
}
