#!/usr/bin/env python3
"""Generates GT's op definitions from the spec files in ops/ (see ops/README.md).

    python3 ops/generate.py --out-include DIR --out-python FILE ops/creation.yaml ...

Writes, from one definition per op:
  DIR/gt/Core/OpCodes.inc      the OpCode enumerators, in spec order (the wire's op numbers)
  DIR/gt/Core/OpSpecs.inc      the op table: kind, operands, dtype rule, typed attributes
  DIR/gt/Dialect/GTOpsGen.td   the ODS definition of every op, with its summary and description
  DIR/gt/Core/Derivatives.inc  every derivative formula as data (steps the client core runs)
  DIR/gt/Core/OpAttrStructs.inc one typed attribute struct per op (gt::attrs::Cumsum{axis})
  FILE (python/gt/_ops.py)     op codes, attribute names, the generated Python functions and
                               Tensor methods with docstrings, and autograd's backward function
                               of each differentiable op (a call into the client core)

Exits with status 1 and a message naming the op when the spec is inconsistent: an unknown
field, kind, dtype rule or attribute type; a differentiable op without a formula for one of
its operands; a formula that calls something that is neither an op nor a helper, or passes an
attribute the called op does not declare.
"""
import argparse
import ast
import os
import sys

import yaml

KINDS = {
    "creation": "Creation", "unary": "Unary", "binary": "Binary", "compare": "Compare", "select": "Select",
    "matmul": "Matmul", "layout": "Layout", "reduction": "Reduction", "index": "Index",
    "lifetime": "Lifetime", "distribution": "Distribution",
}
# Dtype rules of the generic shape/dtype functions in lib/Core/OpTable.cpp.
DTYPE_RULES = {
    "none": "None",              # the op's own shape function decides
    "float": "Float",            # floating-point operands only; the result keeps the dtype
    "numeric": "Numeric",        # any dtype but bool; kept
    "any": "Any",                # any dtype; kept
    "attr": "Attr",              # the result dtype is the `dtype` attribute
    "float_attr": "FloatAttr",   # the `dtype` attribute, which must be floating-point
    "promote": "Promote",        # operands promote; bool arithmetic is refused
    "promote_float": "PromoteFloat",  # operands promote to a floating-point dtype
    "promote_or_bool": "PromoteOrBool",  # operands promote; bool allowed (or / and)
    "integral": "Integral",      # integer or bool operands (promoting); floating point is refused
    "bool": "Bool",              # the result is a bool mask
    "accumulate": "Accumulate",  # sums: bool and int32 give int64, the rest is kept
    "index": "Index",            # an int64 index (argmax); the operand is not bool
}
ATTR_TYPES = {  # spec type -> (C++ AttrType, ODS attribute)
    "i64": ("I64", "I64Attr"), "i64[]": ("I64Array", "DenseI64ArrayAttr"), "f64": ("F64", "F64Attr"),
    # axes of the first operand: checked against its rank, normalized by the Python client
    "axis": ("I64", "I64Attr"), "axes": ("I64Array", "DenseI64ArrayAttr"),
    "bool": ("Bool", "BoolAttr"), "dtype": ("DType", None), "shape": ("Shape", None),
    "reduce": ("Reduce", "StrAttr"),
}
SLOTS = {"shape": "Shape", "axes": "Axes", "starts": "Starts", "steps": "Steps", "keepdims": "Keepdims",
         "value": "Value", "seed": "Seed", "count": "Count", "dtype": "DType", "workers": "Workers",
         "sources": "Sources", "reduce": "Reduce"}
# Shape rules: a function gt::shape::<name> in lib/Core/ShapeRules.cpp. Kinds with a generic
# rule default to it; an op of any other kind has a rule of its own name (shape::sliceScatter).
SHAPE_DEFAULTS = {"creation": "creation", "unary": "unary", "binary": "broadcast", "compare": "broadcast",
                  "select": "select", "matmul": "matmul", "reduction": "reduction", "lifetime": "same",
                  "distribution": "redistribute"}
# Sharding rules of gt-propagate-sharding (lib/Dialect/Transforms/PropagateSharding.cpp).
SHARDING_RULES = {
    "replicated": "Replicated",      # every operand whole on the op's workers
    "creation": "Creation",          # laid out as a `shard:` signal says
    "elementwise": "Elementwise",    # a split operand's axis splits the result
    "batch": "Batch",                # elementwise over all but the last two axes (tril, triu)
    "outside_axes": "OutsideAxes",   # elementwise over the axes no axis/axes attribute names (cumsum)
    "first_axis": "FirstAxis",       # a split first axis (the batch) splits the result's; others gather (im2col)
    "matmul": "Matmul", "reduction": "Reduction", "layout": "Layout", "index": "Index",
    "distribution": "Distribution",
    "windows": "Windows",            # convolutions, pools: a split batch splits the result's (a weight gradient: partial sums)
}
SHARDING_DEFAULTS = {"unary": "elementwise", "binary": "elementwise", "compare": "elementwise",
                     "select": "elementwise", "lifetime": "replicated"}
PARTIALS = {"none": -1, "sum": 0, "max": 1, "min": 2}  # gt::ReduceKind
OP_FIELDS = {"name", "kind", "summary", "description", "doc", "operands", "results", "attrs", "dtype",
             "fusible", "pure", "python", "method", "differentiable", "nondifferentiable", "grad", "shape",
             "sharding", "partial", "min_rank"}
ATTR_FIELDS = {"name", "type", "storage", "in", "runtime", "default", "doc", "python"}
# Functions a derivative formula may call besides ops: implemented in the client core
# (lib/Client/Autograd.cpp). name -> (arguments, what it returns).
HELPERS = {
    "unbroadcast": ("g, x", "g summed over the axes broadcasting added, to x's shape"),
    "cast_like": ("a, b", "a converted to b's dtype"),
    "sign": ("x", "-1, 0 or 1 by the sign of x, in x's dtype"),
    "zeros_like": ("x", "zeros of x's shape and dtype"),
    "mT": ("x", "x with its last two axes swapped"),
    "matmul_rhs_grad": ("lhs, g, rhs", "mT(lhs) @ g summed to rhs's shape; one product over all of lhs's rows "
                                       "when rhs is one matrix that every batch element of lhs multiplied"),
    "inverse_perm": ("perm", "the inverse of a permutation (a list of ints)"),
    "expand_reduced": ("g, x, axes, keepdims", "a reduction's gradient broadcast back to x's shape"),
    "reduced_count": ("x, axes", "the number of elements a reduction over axes combines (a number)"),
    "extremum_grad": ("g, result, x, axes, keepdims", "amax/amin's gradient, shared evenly between ties"),
    "split_as": ("g, tensors, axis", "g cut along axis into pieces the sizes of tensors"),
    "slice_grad": ("g, x, starts, steps", "slice_scatter(zeros_like(x), g, starts=starts, steps=steps), kept lazy: "
                                          "gradients of disjoint windows of x join into one concat"),
}


class SpecError(Exception):
    pass


def fail(op, why):
    raise SpecError(f"{op}: {why}")


# ---------------------------------------------------------------- reading the spec

def load(paths):
    ops = []
    for path in paths:
        with open(path) as f:
            doc = yaml.safe_load(f) or {}
        defaults = doc.get("defaults", {})
        for raw in doc.get("ops", []):
            name = raw.get("name") or fail(path, "an op without a name")
            kind = raw.get("kind")
            if kind not in KINDS:
                fail(name, f"unknown kind {kind!r} (one of {', '.join(KINDS)})")
            op = dict(defaults.get(kind, {}))
            op.update(raw)
            unknown = set(op) - OP_FIELDS
            if unknown:
                fail(name, f"unknown field(s) {sorted(unknown)} (see ops/README.md)")
            op["file"] = os.path.basename(path)
            ops.append(normalize(op))
    names = [o["name"] for o in ops]
    if len(set(names)) != len(names):
        fail("spec", f"an op is defined twice: {sorted(n for n in names if names.count(n) > 1)}")
    return ops


def normalize(op):
    name = op["name"]
    op.setdefault("operands", [])
    op.setdefault("results", 1)
    op.setdefault("attrs", [])
    op.setdefault("dtype", "none")
    op.setdefault("fusible", False)
    op.setdefault("pure", op["kind"] not in ("creation", "lifetime", "distribution"))
    op.setdefault("python", "custom")
    op.setdefault("method", False)
    op.setdefault("differentiable", op["kind"] not in ("creation", "lifetime", "distribution"))
    op.setdefault("nondifferentiable", [])
    op.setdefault("grad", {})
    op.setdefault("doc", op.get("summary", ""))
    op.setdefault("shape", SHAPE_DEFAULTS.get(op["kind"], name))
    op.setdefault("sharding", SHARDING_DEFAULTS.get(op["kind"], op["kind"]))
    op.setdefault("partial", "none")
    op.setdefault("min_rank", 0)
    if op["sharding"] not in SHARDING_RULES:
        fail(name, f"unknown sharding rule {op['sharding']!r} (one of {', '.join(SHARDING_RULES)})")
    if op["partial"] not in PARTIALS:
        fail(name, f"unknown partial {op['partial']!r} (one of {', '.join(PARTIALS)})")
    if "summary" not in op:
        fail(name, "needs a summary (one line, with shapes)")
    op["description"] = op.get("description", "").replace("{name}", name).rstrip()
    if op["dtype"] not in DTYPE_RULES:
        fail(name, f"unknown dtype rule {op['dtype']!r} (one of {', '.join(DTYPE_RULES)})")
    if op["python"] not in ("generated", "custom", "none"):
        fail(name, "python must be generated, custom or none")
    operands = []
    for o in op["operands"]:
        variadic, optional = o.endswith("*"), o.endswith("?")
        operands.append({"name": o.rstrip("*?"), "variadic": variadic, "optional": optional})
    op["operands"] = operands
    if any(o["variadic"] or o["optional"] for o in operands):
        op["arity"] = -1
    else:
        op["arity"] = len(operands)
    attrs = []
    for a in op["attrs"]:
        unknown = set(a) - ATTR_FIELDS
        if unknown:
            fail(name, f"attribute {a.get('name')}: unknown field(s) {sorted(unknown)}")
        a = dict(a)
        if a.get("type") not in ATTR_TYPES:
            fail(name, f"attribute {a.get('name')}: unknown type {a.get('type')!r} (one of {', '.join(ATTR_TYPES)})")
        a.setdefault("in", "attribute")  # attribute | result (the MLIR result type) | mlir (MLIR only)
        a.setdefault("runtime", False)
        a.setdefault("doc", "")
        storage = a.get("storage")
        if a["in"] == "mlir":
            a["slot"], a["index"] = "None", -1
        else:
            if storage is None:
                fail(name, f"attribute {a['name']} needs a storage slot (one of {', '.join(SLOTS)})")
            field, _, index = storage.partition("[")
            if field not in SLOTS:
                fail(name, f"attribute {a['name']}: unknown storage {storage!r}")
            a["slot"], a["index"] = SLOTS[field], int(index.rstrip("]")) if index else -1
        attrs.append(a)
    op["attrs"] = attrs
    return op


# ---------------------------------------------------------------- derivative formulas

def check_formulas(ops):
    by_name = {o["name"]: o for o in ops}
    for op in ops:
        operand_names = [o["name"] for o in op["operands"]]
        if not op["differentiable"]:
            if op["grad"]:
                fail(op["name"], "is marked differentiable: false but has grad formulas")
            continue
        for o in operand_names:
            if o not in op["grad"] and o not in op["nondifferentiable"]:
                fail(op["name"], f"is differentiable but has no derivative formula for operand `{o}` "
                                 f"(add grad: {{{o}: ...}} to {op['file']}, or list it in nondifferentiable)")
        for o, formula in op["grad"].items():
            if o not in operand_names:
                fail(op["name"], f"grad names `{o}`, which is not an operand ({', '.join(operand_names)})")
            tree = parse_formula(op, o, str(formula))
            known = set(operand_names) | {a["name"] for a in op["attrs"]} | {"g", "result"}
            for node in ast.walk(tree):
                if isinstance(node, ast.Call):
                    if not isinstance(node.func, ast.Name):
                        fail(op["name"], f"grad of {o}: only plain calls are allowed: {formula}")
                    f = node.func.id
                    if f in HELPERS:
                        continue
                    callee = by_name.get(f) or fail(op["name"], f"grad of {o} calls {f}, which is neither an op nor a "
                                                                 f"helper ({', '.join(sorted(HELPERS))})")
                    declared = {a["name"] for a in callee["attrs"]}
                    for k in node.keywords:
                        if k.arg not in declared:
                            fail(op["name"], f"grad of {o}: {f} has no attribute {k.arg!r}")
            for node in ast.walk(tree):
                if isinstance(node, ast.Name) and node.id not in known and node.id not in HELPERS \
                        and node.id not in by_name:
                    fail(op["name"], f"grad of {o} uses an unknown name `{node.id}` in {formula}")
                if isinstance(node, ast.Attribute) and node.attr != "shape":
                    fail(op["name"], f"grad of {o}: only `.shape` may be read from a tensor, got .{node.attr}")
            op.setdefault("trees", {})[o] = tree


# Helper arguments read for their shape or dtype only (not their values).
SHAPE_ONLY = {"unbroadcast": {1}, "cast_like": {1}, "zeros_like": {0}, "matmul_rhs_grad": {2},
              "expand_reduced": {1}, "reduced_count": {0}, "split_as": {1}, "slice_grad": {1}}


def formula_reads(tree):
    """The names a formula reads as values (not only their `.shape`, nor as a helper's
    shape-or-dtype argument)."""
    skipped = {id(n.value) for n in ast.walk(tree) if isinstance(n, ast.Attribute) and n.attr == "shape"}
    for n in ast.walk(tree):
        if isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id in SHAPE_ONLY:
            skipped |= {id(a) for i, a in enumerate(n.args) if i in SHAPE_ONLY[n.func.id] and isinstance(a, ast.Name)}
    return {n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and id(n) not in skipped}


def parse_formula(op, operand, formula):
    try:
        tree = ast.parse(formula, mode="eval").body
    except SyntaxError as e:
        fail(op["name"], f"grad of {operand} is not an expression: {formula} ({e.msg})")
    allowed = (ast.BinOp, ast.UnaryOp, ast.Compare, ast.Call, ast.Name, ast.Constant, ast.Attribute, ast.keyword,
               ast.List, ast.Load, ast.Add, ast.Sub, ast.Mult, ast.Div, ast.USub, ast.Gt, ast.Lt, ast.GtE, ast.LtE, ast.Eq,
               ast.NotEq)
    for node in ast.walk(tree):
        if not isinstance(node, allowed):
            fail(op["name"], f"grad of {operand}: {type(node).__name__} is not allowed in a formula: {formula}")
        if isinstance(node, ast.Compare) and len(node.ops) != 1:
            fail(op["name"], f"grad of {operand}: chained comparisons are not allowed: {formula}")
    return tree


BINOPS = {ast.Add: "add", ast.Sub: "sub", ast.Mult: "mul", ast.Div: "div"}
CMPOPS = {ast.Gt: "gt", ast.Lt: "lt", ast.GtE: "ge", ast.LtE: "le", ast.Eq: "eq", ast.NotEq: "ne"}


def formula_steps(op, tree):
    """Flattens a formula into steps: (kind, name, args, keywords). Args refer to earlier steps
    by index. Kinds: input (an operand, a name), grad, result, attr (a name), const (a number),
    shape (of a step), list (of steps: an axis list such as `[axis]`), op (a gt op), helper."""
    steps = []

    def emit(kind, name="", args=(), keywords=()):
        steps.append((kind, name, tuple(args), tuple(keywords)))
        return len(steps) - 1

    operand_names = [o["name"] for o in op["operands"]]

    def walk(n):
        if isinstance(n, ast.Constant):
            return emit("const", repr(float(n.value)))
        if isinstance(n, ast.Name):
            if n.id == "g":
                return emit("grad")
            if n.id == "result":
                return emit("result")
            if n.id in operand_names:
                return emit("input", n.id, [operand_names.index(n.id)])
            return emit("attr", n.id)
        if isinstance(n, ast.Attribute):
            return emit("shape", "", [walk(n.value)])
        if isinstance(n, ast.List):
            return emit("list", "", [walk(e) for e in n.elts])
        if isinstance(n, ast.UnaryOp):
            return emit("op", "neg", [walk(n.operand)])
        if isinstance(n, ast.BinOp):
            return emit("op", BINOPS[type(n.op)], [walk(n.left), walk(n.right)])
        if isinstance(n, ast.Compare):
            return emit("op", CMPOPS[type(n.ops[0])], [walk(n.left), walk(n.comparators[0])])
        if isinstance(n, ast.Call):
            args = [walk(a) for a in n.args]
            keywords = [(k.arg, walk(k.value)) for k in n.keywords]
            return emit("helper" if n.func.id in HELPERS else "op", n.func.id, args, keywords)
        raise AssertionError(ast.dump(n))

    walk(tree)
    return steps


# ---------------------------------------------------------------- C++

def camel(name):
    return "".join(p[:1].upper() + p[1:] for p in name.split("_"))


def cstr(s):
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"'


def gen_opcodes(ops):
    lines = ["// Generated by ops/generate.py from ops/*.yaml: the OpCode enumerators. Do not edit."]
    lines += [f"{camel(o['name'])}," for o in ops]
    return "\n".join(lines) + "\n"


def gen_opspecs(ops):
    out = ["// Generated by ops/generate.py from ops/*.yaml: the op table. Do not edit.", ""]
    for op in ops:
        if not op["attrs"]:
            continue
        out.append(f"static constexpr AttrSpec k{camel(op['name'])}Attrs[] = {{")
        for a in op["attrs"]:
            place = {"attribute": "Attribute", "result": "Result", "mlir": "MlirOnly"}[a["in"]]
            default = a.get("default")
            default = "" if default is None else str(default).lower() if isinstance(default, bool) else str(default)
            names_axes = a["type"] in ("axis", "axes")
            out.append(f"    {{{cstr(a['name'])}, AttrType::{ATTR_TYPES[a['type']][0]}, AttrSlot::{a['slot']}, "
                       f"{a['index']}, AttrPlace::{place}, {str(a['runtime']).lower()}, {cstr(default)}, "
                       f"{str(names_axes).lower()}}},")
        out.append("};")
    out += ["", "static constexpr OpInfo kOps[] = {"]
    for op in ops:
        attrs = f"k{camel(op['name'])}Attrs" if op["attrs"] else "{}"
        shape = camel(op["shape"])
        shape = shape[:1].lower() + shape[1:]
        out.append(f"    {{OpCode::{camel(op['name'])}, {cstr(op['name'])}, OpKind::{KINDS[op['kind']]}, {op['arity']}, "
                   f"{op['results']}, DTypeRule::{DTYPE_RULES[op['dtype']]}, {str(op['fusible']).lower()}, "
                   f"{str(op['differentiable']).lower()}, {attrs}, {cstr(op['summary'])}, &shape::{shape}, "
                   f"ShardingRule::{SHARDING_RULES[op['sharding']]}, {PARTIALS[op['partial']]}, {op['min_rank']}}},")
    out.append("};")
    return "\n".join(out) + "\n"


# spec type -> C++ field type of the typed attribute structs
CPP_TYPES = {"i64": "int64_t", "axis": "int64_t", "i64[]": "std::vector<int64_t>", "axes": "std::vector<int64_t>",
             "f64": "double", "bool": "bool", "dtype": "DType", "shape": "Shape", "reduce": "ReduceKind"}
# OpAttrs field and C++ type of each storage slot
SLOT_FIELDS = {"Shape": "shape", "Axes": "axes", "Starts": "starts", "Steps": "steps", "Keepdims": "keepdims",
               "Value": "value", "Seed": "seed", "Count": "count", "DType": "dtype", "Workers": "workers",
               "Sources": "sources", "Reduce": "reduce"}


def cpp_field(name):
    parts = name.split("_")
    return parts[0] + "".join(p[:1].upper() + p[1:] for p in parts[1:])


def gen_attr_structs(ops):
    """One struct per op with attributes: typed fields named as in the spec, `of` (from OpAttrs)
    and `into` (to OpAttrs, the storage the wire, plan keys and MLIR conversions read through the
    table). Spec attribute names that are C++ keywords or these two would need renaming here."""
    out = ["// Generated by ops/generate.py from ops/*.yaml: one typed attribute struct per op. Do not edit.",
           "// Included by gt/Core/OpAttrStructs.h inside namespace gt::attrs.", ""]
    cases = []
    for op in ops:
        attrs = [a for a in op["attrs"] if a["slot"] != "None"]
        if not attrs:
            continue
        struct = camel(op["name"])
        out.append(f"/// {op['name']}'s attributes ({op['file']}).")
        out.append(f"struct {struct} {{")
        reads, writes = [], []
        for a in attrs:
            ctype, field = CPP_TYPES[a["type"]], cpp_field(a["name"])
            slot = "a." + SLOT_FIELDS[a["slot"]]
            doc = f"  ///< {a['doc']}" if a["doc"] else ""
            out.append(f"  {ctype} {field}{{}};{doc}")
            if a["index"] >= 0:  # one element of a list slot
                reads.append(f"r.{field} = element({slot}, {a['index']}, {cstr(op['name'] + '.' + a['name'])});")
                writes.append(f"setElement({slot}, {a['index']}, {field});")
            elif a["type"] == "reduce":
                reads.append(f"r.{field} = ReduceKind({slot});")
                writes.append(f"{slot} = uint8_t({field});")
            else:
                reads.append(f"r.{field} = {slot};")
                writes.append(f"{slot} = {field};")
        out.append(f"  /// Reads them from `a`; std::out_of_range if an element of a list slot is missing.")
        out.append(f"  static {struct} of(const OpAttrs &a) {{")
        out.append(f"    {struct} r;")
        out += [f"    {line}" for line in reads]
        out.append("    return r;")
        out.append("  }")
        out.append("  /// Writes them into `a`, leaving the fields this op does not declare alone.")
        out.append("  void into(OpAttrs &a) const {")
        out += [f"    {line}" for line in writes]
        out.append("  }")
        out.append("};")
        out.append("")
        cases.append(f"  case OpCode::{struct}: {struct}::of(a).into(out); return out;")
    out.append("/// `a` read into `code`'s struct and written back into an empty OpAttrs (what a test checks")
    out.append("/// against the declared fields of `a`); an op without attributes gives an empty OpAttrs.")
    out.append("inline OpAttrs roundTrip(OpCode code, const OpAttrs &a) {")
    out.append("  OpAttrs out;")
    out.append("  switch (code) {")
    out += cases
    out.append("  default: return out;")
    out.append("  }")
    out.append("}")
    return "\n".join(out) + "\n"


def gen_derivatives(ops):
    out = ["// Generated by ops/generate.py from the `grad:` formulas in ops/*.yaml. Do not edit.",
           "// One DerivativeStep list per (op, operand); the last step of a list is the gradient.", ""]
    entries = []
    for op in ops:
        for o, tree in op.get("trees", {}).items():
            steps = formula_steps(op, tree)
            var = f"k{camel(op['name'])}{camel(o)}Grad"
            out.append(f"// d {op['name']} / d {o} = {op['grad'][o]}")
            out.append(f"static constexpr DerivativeStep {var}[] = {{")
            for kind, name, args, keywords in steps:
                if len(args) > 6 or len(keywords) > 6:
                    fail(op["name"], f"grad of {o}: a call with more than 6 arguments or 6 keywords")
                a = ", ".join(str(x) for x in args)
                kw = ", ".join(f"{{{cstr(k)}, {v}}}" for k, v in keywords)
                out.append(f"    {{StepKind::{camel(kind)}, {cstr(name)}, {len(args)}, {{{a}}}, {len(keywords)}, {{{kw}}}}},")
            out.append("};")
            index = [x["name"] for x in op["operands"]].index(o)
            entries.append(f"    {{OpCode::{camel(op['name'])}, {index}, {cstr(str(op['grad'][o]))}, {var}}},")
    out += ["", "static constexpr Derivative kDerivatives[] = {"] + entries + ["};", ""]
    out += ["static constexpr DerivativeHelper kHelpers[] = {"]
    out += [f"    {{{cstr(n)}, {cstr(a)}, {cstr(r)}}}," for n, (a, r) in HELPERS.items()]
    out += ["};"]
    return "\n".join(out) + "\n"


def gen_ods(ops):
    out = ["// Generated by ops/generate.py from ops/*.yaml: one ODS op per spec entry. Do not edit;",
           "// included by include/gt/Dialect/GTOps.td.", ""]
    for op in ops:
        operands = op["operands"]
        args = []
        for o in operands:
            t = "Variadic<AnyRankedTensor>" if o["variadic"] else \
                "Optional<AnyRankedTensor>" if o["optional"] else "AnyRankedTensor"
            args.append(f"{t}:${o['name']}")
        for a in op["attrs"]:
            if a["in"] == "result":
                continue
            ods = ATTR_TYPES[a["type"]][1]
            if a["type"] == "reduce":
                ods = f'DefaultValuedStrAttr<StrAttr, "{a.get("default", "sum")}">'
            elif a["type"] == "bool" and "default" in a:
                ods = f'DefaultValuedAttr<BoolAttr, "{str(a["default"]).lower()}">'
            elif a["runtime"]:
                ods = f"OptionalAttr<{ods}>"
            args.append(f"{ods}:${a['name']}")
        traits = "[Pure]" if op["pure"] else ""
        out.append(f"def GT_{camel(op['name'])}Op : GT_Op<\"{op['name']}\"{', ' + traits if traits else ''}> {{")
        out.append(f"  let summary = {cstr(op['summary'])};")
        if op["description"]:
            out.append("  let description = [{")
            out += ["    " + line if line else "" for line in op["description"].splitlines()]
            out.append("  }];")
        out.append(f"  let arguments = (ins {', '.join(args)});")
        if op["results"]:
            out.append("  let results = (outs AnyRankedTensor:$result);")
        out.append(f"  let assemblyFormat = {cstr(assembly(op))};")
        out.append("}")
        out.append("")
    return "\n".join(out)


def assembly(op):
    operands = op["operands"]
    result = " `->` type($result)" if op["results"] else ""
    if len(operands) == 1 and operands[0]["optional"]:
        n = operands[0]["name"]
        return f"(`(` ${n}^ `:` type(${n}) `)`)? attr-dict `:` type($result)"
    if not operands:
        return "attr-dict `:` type($result)"
    values = " `,` ".join(f"${o['name']}" for o in operands)
    types = " `,` ".join(f"type(${o['name']})" for o in operands)
    return f"{values} attr-dict `:` {types}{result}"


# ---------------------------------------------------------------- Python

def gen_python(ops):
    out = ['"""Generated by ops/generate.py from ops/*.yaml. Do not edit.',
           "",
           "CODES: op name -> op code. ATTRS: op name -> its attribute names. The public functions",
           "and Tensor methods of ops whose spec says `python: generated`. DIFFERENTIABLE: the ops",
           "with derivative formulas; autograd's backward function for each (`gt.autograd.formulas`)",
           'runs them in the client core, from the derivative table (gt._C.Client.derivative)."""',
           "from . import _tensor as _T",
           "from . import autograd as _ag",
           "",
           "CODES = {" + ", ".join(f"{o['name']!r}: {i}" for i, o in enumerate(ops)) + "}",
           "ATTRS = {",
           ]
    out += [f"    {o['name']!r}: {tuple(a['name'] for a in o['attrs'] if a['in'] != 'mlir')!r}," for o in ops]
    out += ["}", "", ""]

    functions, methods = [], []
    for op in ops:
        if op["python"] != "generated":
            continue
        out += python_function(op, op["method"])
        functions.append(op["name"])
        if op["method"]:
            methods.append(op["name"])
    out.append("FUNCTIONS = (" + "".join(f"{f!r}, " for f in functions) + ")")
    out.append("__all__ = list(FUNCTIONS)")
    out.append("METHODS = (" + "".join(f"{m!r}, " for m in methods) + ")")
    out += ["", ""]

    # The formulas themselves run in the client core, from the derivative table (Derivatives.inc).
    differentiable = [op["name"] for op in ops if op.get("trees")]
    out.append("DIFFERENTIABLE = (" + "".join(f"{n!r}, " for n in differentiable) + ")")
    # What each formula reads of the forward op (beyond g): a gradient that reads a tensor which
    # requires grad depends on it (with a zero derivative where the read is a comparison), as in
    # PyTorch's graph (relu's gradient reads its input), so create_graph links them.
    out.append("READS = {  # op code -> per operand: (the operands its formula reads, whether it reads the result)")
    for i, op in enumerate(ops):
        trees = op.get("trees")
        if not trees:
            continue
        names = [o["name"] for o in op["operands"]]
        per = []
        for o in names:
            tree = trees.get(o)
            read = formula_reads(tree) if tree is not None else set()
            per.append((tuple(names.index(n) for n in names if n in read), "result" in read))
        if any(r[0] or r[1] for r in per):
            out.append(f"    {i}: {tuple(per)!r},  # {op['name']}")
    out.append("}")
    out += ["", "",
            "def _formula(code):",
            '    """The backward function of op `code`: its formulas in the derivative table (the',
            '    client core\'s backward pass runs them without calling this)."""',
            "    def backward(g, result, inputs, attrs):",
            "        return _T._derivative(code, g, result, inputs, attrs)",
            "    _T._C.register_formula(backward, code)",
            "    return backward",
            "", "",
            "_ag.formulas.update({name: _formula(CODES[name]) for name in DIFFERENTIABLE})",
            ""]
    return "\n".join(out)


# How a generated function turns a Python argument into an attribute value, by spec type.
PY_CONVERT = {"axis": "_T._dim({p}, x.ndim)", "axes": "_T._dims({p}, x.ndim)", "bool": "bool({p})",
              "i64": "int({p})", "f64": "float({p})"}


def python_function(op, method):
    """A generated public function: the operands (x; or a, b), then one parameter per attribute
    under its `python:` name, converted by type (axes normalized against x); registered as a
    Tensor method too when `method`."""
    n = op["name"]
    operands = ["x"] if len(op["operands"]) == 1 else ["a", "b"] if len(op["operands"]) == 2 else None
    if operands is None or any(o["variadic"] or o["optional"] for o in op["operands"]):
        fail(n, "python: generated supports ops of one or two plain operands (write it in python/gt/_functions.py)")
    params, args, docs = list(operands), [], []
    for a in op["attrs"]:
        if a["in"] != "attribute":
            fail(n, f"python: generated cannot set attribute {a['name']} (in: {a['in']}); write the function by hand")
        p = a.get("python") or fail(n, f"attribute {a['name']} needs a `python:` parameter name for the generated function")
        if a["type"] not in PY_CONVERT:
            fail(n, f"attribute {a['name']}: a generated function cannot take a {a['type']}")
        params.append(f"{p}={a['default']!r}" if "default" in a else p)
        args.append(f"{a['name']}={PY_CONVERT[a['type']].format(p=p)}")
        docs.append(f"{p}: {a['doc']}" if a["doc"] else p)
    doc = op["doc"].rstrip(".")
    if op["kind"] == "unary" and not op["attrs"]:
        doc += "; same shape and dtype as the input (floats only unless noted)"
    elif op["kind"] == "compare":
        doc += " (broadcasting; a bool mask)"
    doc += "."
    raises = []
    if op.get("min_rank"):
        raises.append(f"gt.ShapeError (a ValueError) for a tensor of fewer than {op['min_rank']} axes")
    if any(a["type"] == "axes" for a in op["attrs"]):
        raises.append("gt.AxisError (an IndexError) for an axis out of range, gt.ShapeError for a repeated one")
    elif any(a["type"] == "axis" for a in op["attrs"]):
        raises.append("gt.AxisError (an IndexError) for an axis out of range")
    if raises:
        docs.append("Raises " + "; ".join(raises) + ".")
    if docs:
        doc += "\n\n" + "\n".join("    " + d for d in docs) + "\n    "
    call = ", ".join([repr(n)] + operands + args)
    return ([f"@_T._method()"] if method else []) + \
        [f"def {n}({', '.join(params)}):", f'    """{doc}"""', f"    return _T._op({call})", "", ""]


# ---------------------------------------------------------------- main

def write(path, text):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    try:
        with open(path) as f:
            if f.read() == text:
                return  # unchanged: keep the timestamp (no rebuild)
    except FileNotFoundError:
        pass
    with open(path, "w") as f:
        f.write(text)


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out-include", required=True, help="directory for the C++ and ODS outputs")
    p.add_argument("--out-python", required=True, help="the generated Python module")
    p.add_argument("specs", nargs="+", help="spec files, in op-code order")
    args = p.parse_args()
    try:
        ops = load(args.specs)
        check_formulas(ops)
    except SpecError as e:
        print(f"ops/generate.py: error: {e}", file=sys.stderr)
        return 1
    inc = args.out_include
    write(os.path.join(inc, "gt/Core/OpCodes.inc"), gen_opcodes(ops))
    write(os.path.join(inc, "gt/Core/OpSpecs.inc"), gen_opspecs(ops))
    write(os.path.join(inc, "gt/Core/Derivatives.inc"), gen_derivatives(ops))
    write(os.path.join(inc, "gt/Core/OpAttrStructs.inc"), gen_attr_structs(ops))
    write(os.path.join(inc, "gt/Dialect/GTOpsGen.td"), gen_ods(ops))
    write(args.out_python, gen_python(ops))
    return 0


if __name__ == "__main__":
    sys.exit(main())
