// RUN: gt-opt %s --gt-cpu-byte-bools | FileCheck %s

// A bool load becomes a byte load (same alignment and alias scopes) and a compare with 0; a
// bool store a zero extension and a byte store. Other loads and stores are left alone.
// CHECK-LABEL: llvm.func @where
// CHECK: %[[BYTE:.*]] = llvm.load %{{.*}} {alias_scopes = [#{{.*}}], alignment = 1 : i64} : !llvm.ptr -> i8
// CHECK: %[[ZERO:.*]] = llvm.mlir.constant(0 : i8) : i8
// CHECK: %[[SET:.*]] = llvm.icmp "ne" %[[BYTE]], %[[ZERO]] : i8
// CHECK: llvm.load %{{.*}} : !llvm.ptr -> f32
// CHECK: llvm.select %[[SET]]
// CHECK: %[[WIDE:.*]] = llvm.zext %[[SET]] : i1 to i8
// CHECK: llvm.store %[[WIDE]], %{{.*}} {alignment = 1 : i64} : i8, !llvm.ptr
// CHECK-NOT: -> i1
// CHECK-NOT: : i1, !llvm.ptr
#domain = #llvm.alias_scope_domain<id = distinct[0]<>>
#scope = #llvm.alias_scope<id = distinct[1]<>, domain = #domain>
llvm.func @where(%mask: !llvm.ptr, %x: !llvm.ptr, %out: !llvm.ptr, %flags: !llvm.ptr) {
  %m = llvm.load %mask {alias_scopes = [#scope], alignment = 1 : i64} : !llvm.ptr -> i1
  %v = llvm.load %x : !llvm.ptr -> f32
  %z = llvm.mlir.constant(0.0 : f32) : f32
  %r = llvm.select %m, %v, %z : i1, f32
  llvm.store %r, %out : f32, !llvm.ptr
  llvm.store %m, %flags {alignment = 1 : i64} : i1, !llvm.ptr
  llvm.return
}
