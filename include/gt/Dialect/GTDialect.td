// The `gt` dialect: GT's instruction stream as MLIR.
#ifndef GT_DIALECT_TD
#define GT_DIALECT_TD

include "mlir/IR/OpBase.td"

def GT_Dialect : Dialect {
  let name = "gt";
  let summary = "GT's eager instruction stream: tensor ops, lifetime and placement";
  let description = [{
    Every instruction a GT client issues becomes one `gt` op on builtin ranked tensors
    (f32 default; f64, i64, i32 and i1 for bool). The op table in `lib/Core` is the single
    definition of each op's shape and dtype rule; every verifier calls it.

    Discardable attributes used by the dispatcher:
    - `gt.id` (i64): the session's tensor id an op defines (on ops) or names (on arguments);
    - `gt.worker` (i64): the worker an argument lives on, or a function's ops run on (set by
      `gt-split-by-worker` on each @workerN function, and on its regions);
    - `gt.signal` (string): the signal the client had active when it issued the op (for
      inserted collectives: the signal that caused them); `gt.backward` (unit): the op is part
      of a gradient;
    - `gt.sharding` (#gt.sharding): the layout of an op's result (or of an argument), set by
      `gt-apply-signals` and `gt-propagate-sharding`; `gt.workers` (array): the workers a
      signal asks an op to run on.
  }];
  let cppNamespace = "::mlir::gt";
  let useDefaultAttributePrinterParser = 1;
}

#endif // GT_DIALECT_TD
