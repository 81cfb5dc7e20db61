// The `gt` dialect's attributes: how a value is laid out over workers.
#ifndef GT_ATTRS_TD
#define GT_ATTRS_TD

include "gt/Dialect/GTDialect.td"
include "mlir/IR/AttrTypeBase.td"

def GT_ShardingAttr : AttrDef<GT_Dialect, "Sharding"> {
  let mnemonic = "sharding";
  let summary = "a value's layout over workers: replicated, split(axis) or partial(sum|max|min)";
  let description = [{
    The MLIR mesh dialect's three layouts over a group of workers (listed in rank order):
    every worker holds all of the value; worker rank r holds block r of `axis` (balanced like
    numpy.array_split: 13 rows over 4 workers are 4, 3, 3, 3); or every worker holds a
    full-size tensor and the value is their sum (max, min), resolved by `gt.all_reduce`.
    ```mlir
    #gt.sharding<replicated over [0]>
    #gt.sharding<split(0) over [0, 1, 2, 3]>
    #gt.sharding<partial(sum) over [0, 1]>
    ```
  }];
  let parameters = (ins "::gt::ShardKind":$kind, "int64_t":$axis, "::gt::ReduceKind":$reduce,
                        ArrayRefParameter<"int64_t">:$workers);
  let hasCustomAssemblyFormat = 1;
  let extraClassDeclaration = [{
    ::gt::Sharding toCore() const;
    static ShardingAttr fromCore(::mlir::MLIRContext *ctx, const ::gt::Sharding &s);
  }];
}

#endif // GT_ATTRS_TD
