#!/usr/bin/env python3
"""gen-op-tables: the tables of the tg op records, generated at build time.

Reads the records of TGOps.td as `llvm-tblgen --dump-json` prints them and
writes, for every op derived from TG_Op (the facts of TGOpInfo.td):

  TGAmpClasses.inc  TG_AMP_CLASS("tg.NAME", Class) per op: the AMP defaults
                    (an X-macro, so the policy table needs no MLIR)
  TGOpInfo.cpp.inc  the OpInfo table of TGOpInfo.h and the per-op functions
                    that need the op classes (in-place operands, load
                    conversion)
  TGGradients.inc   `buildGradient` of every op whose record holds its rule
                    as DAGs (`gradients`)
  TGKernelArgs.inc  TG_KERNEL_ROW(...) per op with `kernelArgs`: the
                    arguments of its kernel call, for the lowering
  TGOpList.json     the op records as JSON (`ampc --list-ops`)
  TGOpList.json.inc the same JSON as a C++ raw string literal

A record without an AMP class, a keyword of an unknown kind or a gradient DAG
that does not fit its op is an error: the build stops and says which record.
With --runtime-kernels (the runtime's X-macro table, runtime_kernels.inc, when
the tree has one) so is a kernel a record names that the runtime does not
have, or an elementwise op whose float attributes differ from its kernel's.
"""

import argparse
import json
import os
import re
import sys


class RecordError(Exception):
    pass


def camel(snake):
    return "".join(p[:1].upper() + p[1:] for p in snake.split("_"))


def cstr(s):
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"'


class Records:
    def __init__(self, doc):
        self.doc = doc

    def get(self, ref):
        if isinstance(ref, dict):
            ref = ref["def"]
        return self.doc[ref]

    def isa(self, rec, cls):
        return cls in rec.get("!superclasses", [])


class Op:
    """One TG_Op record."""

    def __init__(self, recs, rec):
        self.recs = recs
        self.rec = rec
        self.def_name = rec["!name"]
        self.cpp = self.def_name.split("_", 1)[1]
        self.mnemonic = rec["opName"]
        self.name = "tg." + self.mnemonic
        self.loc = rec["!locs"][-1] if rec.get("!locs") else self.def_name
        self.operands = []  # (name, "single" | "optional" | "variadic")
        self.attrs = []     # (name, constraint record)
        for ref, name in rec["arguments"]["args"]:
            c = recs.get(ref)
            if recs.isa(c, "Attr") or recs.isa(c, "AttrConstraint"):
                self.attrs.append((name, c))
            elif recs.isa(c, "Variadic"):
                self.operands.append((name, "variadic"))
            elif recs.isa(c, "Optional"):
                self.operands.append((name, "optional"))
            else:
                self.operands.append((name, "single"))
        self.results = [name for _, name in rec["results"]["args"]]
        cls = recs.get(rec["ampClass"])["name"]
        if not cls:
            raise RecordError("%s: op '%s' (%s) has no AMP class: set `ampClass` to TG_Lower, "
                              "TG_FP32, TG_Promote or TG_Follow" % (self.loc, self.name,
                                                                     self.def_name))
        self.amp_class = cls
        self.role = recs.get(rec["lossScaleRole"])["name"]
        self.kernels = list(rec["kernels"])
        self.load_converts = list(rec["loadConverts"])
        self.in_place = list(rec["inPlace"])
        self.language = rec["language"]
        self.elementwise = rec["elementwise"]
        self.torch = rec["torch"]
        if self.torch.startswith("F."):
            self.torch = "torch.nn.functional." + self.torch[2:]
        self.training = bool(rec["training"])
        self.custom_frontend = bool(rec["customFrontend"])
        self.gradients = rec["gradients"]
        self.needs_float_result = bool(rec["gradientNeedsFloatResult"])
        self.differentiable = any(
            recs.get(t).get("cppInterfaceName") == "GradientOpInterface"
            for t in rec["traits"])
        names = {n for n, _ in self.operands}
        for n in self.load_converts + self.in_place:
            if n != "*" and n not in names:
                raise RecordError("%s: op '%s' names operand '%s', which it does not have "
                                  "(operands: %s)" % (self.loc, self.name, n,
                                                      ", ".join(sorted(names))))
        self.keywords = self.make_keywords()
        self.float_only_kernel = bool(rec["floatOnlyKernel"])
        self.o2_kept_f32 = bool(rec["o2KeptF32"])
        self.kernel_args = [recs.get(r) for r in rec["kernelArgs"]]
        self.index_bound = list(rec["kernelIndexBound"])
        self.check_kernel_args()

    # -- kernel arguments -------------------------------------------------
    # The kinds of TG_KernelArg (TGOpInfo.td): each is the lowering's ArgSpec
    # builder of that name (lib/Conversion/TGToRuntime), called with the
    # operand or result group, the attribute name, or nothing.
    RESULT_ARGS = {"res", "resOrNull", "resBuf", "markFoundInf"}
    OPERAND_ARGS = {"opd", "buf", "list", "dtypes", "numels", "count", "shapes", "flag",
                    "optBuf"}
    ATTR_ARGS = {"i64", "i32", "boolean", "f64", "f32", "dims", "each", "gelu", "reduction",
                 "lrKind"}
    PLAIN_ARGS = {"nullTensor", "f32Dtype", "site", "seed", "stridedGemm"}

    def check_kernel_args(self):
        if not self.kernel_args:
            if self.index_bound:
                raise RecordError("%s: op '%s' has `kernelIndexBound` but no `kernelArgs`" %
                                  (self.loc, self.name))
            return
        if len(self.kernels) != 1:
            raise RecordError("%s: op '%s' has `kernelArgs` but %d kernels (it needs one)" %
                              (self.loc, self.name, len(self.kernels)))
        attrs = {n for n, _ in self.attrs}
        for a in self.kernel_args:
            kind, group, name = a["kind"], a["group"], a["name"]
            if kind in self.RESULT_ARGS and not 0 <= group < len(self.results):
                raise RecordError("%s: kernel argument %s<%d> of '%s': the op has %d result(s)" %
                                  (self.loc, kind, group, self.name, len(self.results)))
            if kind in self.OPERAND_ARGS and not 0 <= group < len(self.operands):
                raise RecordError("%s: kernel argument %s<%d> of '%s': the op has %d operand "
                                  "group(s)" % (self.loc, kind, group, self.name,
                                                len(self.operands)))
            if kind in self.ATTR_ARGS and name not in attrs:
                raise RecordError("%s: kernel argument %s<\"%s\"> of '%s': no such attribute" %
                                  (self.loc, kind, name, self.name))
            if kind not in (self.RESULT_ARGS | self.OPERAND_ARGS | self.ATTR_ARGS |
                            self.PLAIN_ARGS | {"cEnum", "constF64"}):
                raise RecordError("%s: kernel argument of '%s' has unknown kind '%s'" %
                                  (self.loc, self.name, kind))
        if self.index_bound and (len(self.index_bound) != 3 or
                                 not all(0 <= i < len(self.operands)
                                         for i in self.index_bound[:2])):
            raise RecordError("%s: `kernelIndexBound` of '%s' must be [operand, bound, dim] "
                              "with two of its operand groups" % (self.loc, self.name))

    def kernel_arg_cpp(self, a):
        kind = a["kind"]
        if kind in self.RESULT_ARGS or kind in self.OPERAND_ARGS:
            return "%s(%d)" % (kind, a["group"])
        if kind in self.ATTR_ARGS:
            return "%s(%s)" % (kind, cstr(a["name"]))
        if kind == "cEnum":
            return "cEnum(%s, %s)" % (cstr(a["name"]), a["value"])
        if kind == "constF64":
            return "constF64(%s)" % a["value"]
        return kind + "()"

    # -- keywords ---------------------------------------------------------
    ATTR_KINDS = {"F64Attr": "float", "I64Attr": "int", "StrAttr": "string",
                  "BoolAttr": "bool", "UnitAttr": "flag", "DenseI64ArrayAttr": "ints"}

    def attr_base(self, c):
        while "baseAttr" in c and c["baseAttr"] is not None:
            c = self.recs.get(c["baseAttr"])
        return c["!name"]

    def make_keywords(self):
        attr_by_name = dict(self.attrs)
        out = []
        if self.rec["keywords"] is not None:
            for ref in self.rec["keywords"]:
                k = self.recs.get(ref)
                name, kind, dflt = k["name"], k["kind"], k["dflt"]
                if kind not in ("float", "int", "bool", "string", "ints", "pair", "single",
                                "triple", "dim", "dims", "dtype"):
                    raise RecordError("%s: keyword '%s' of '%s' has unknown kind '%s'" %
                                      (self.loc, name, self.name, kind))
                if kind == "bool" and name in attr_by_name and \
                        self.attr_base(attr_by_name[name]) == "UnitAttr":
                    kind = "flag"
                if dflt.startswith("=") and not self.custom_frontend and \
                        dflt[1:] not in [o["name"] for o in out]:
                    raise RecordError("%s: keyword '%s' of '%s' defaults to '%s', which is not "
                                      "a keyword before it" % (self.loc, name, self.name,
                                                               dflt[1:]))
                out.append({"name": name, "kind": kind, "default": dflt,
                            "allowed": list(k["allowed"])})
            return out
        if not self.language:
            return out
        for name, c in self.attrs:
            base = self.attr_base(c)
            kind = self.ATTR_KINDS.get(base)
            if kind is None:
                raise RecordError("%s: attribute '%s' of '%s' is a %s, which a .tg keyword "
                                  "cannot spell: give the op `keywords`" %
                                  (self.loc, name, self.name, base))
            dflt = c.get("defaultValue") or ""
            if dflt.startswith('"') and dflt.endswith('"'):
                dflt = dflt[1:-1]
            if kind == "flag":
                dflt = "false"
            out.append({"name": name, "kind": kind, "default": dflt, "allowed": []})
        return out

    def operand_range(self, language=False):
        lo = sum(1 for _, k in self.operands if k == "single")
        if language and self.rec["languageMinOperands"] >= 0:
            lo = self.rec["languageMinOperands"]
        hi = None if any(k == "variadic" for _, k in self.operands) else len(self.operands)
        return lo, hi

    def operand_group(self, name):
        return [n for n, _ in self.operands].index(name)


# ---------------------------------------------------------------------------
# JSON
# ---------------------------------------------------------------------------

def json_default(kw):
    d, kind = kw["default"], kw["kind"]
    if d == "" or d.startswith("="):
        return None
    try:
        if kind == "float":
            return float(d)
        if kind in ("int", "dim"):
            return int(d)
        if kind in ("bool", "flag"):
            return d == "true"
        if kind in ("single", "triple"):
            return [int(d)] * (1 if kind == "single" else 3)
        if kind in ("ints", "pair", "dims"):
            v = json.loads(d)
            return v
    except ValueError:
        raise RecordError("keyword '%s': default '%s' is not a %s" % (kw["name"], d, kind))
    return d


def op_json(op):
    lo, hi = op.operand_range(language=True)
    kws = []
    for kw in op.keywords:
        entry = {"name": kw["name"],
                 "type": {"flag": "bool", "pair": "ints", "single": "ints", "triple": "ints",
                          "dims": "ints", "dim": "int"}.get(
                     kw["kind"], kw["kind"]),
                 "kind": kw["kind"]}
        d = json_default(kw)
        if kw["default"].startswith("="):
            entry["default_from"] = kw["default"][1:]
        elif kw["default"] == "" and kw["kind"] != "dims":
            entry["required"] = True
        else:
            entry["default"] = d
        if kw["allowed"]:
            entry["allowed"] = kw["allowed"]
        kws.append(entry)
    return {
        "name": op.name,
        "summary": op.rec.get("summary", ""),
        "language": op.language or None,
        "operands": [n for n, _ in op.operands],
        "min_operands": lo,
        "max_operands": hi,
        "attributes": kws,
        "results": op.results,
        "amp_class": op.amp_class,
        "training": op.training,
        "elementwise": op.elementwise or None,
        "torch": op.torch or None,
        "kernels": op.kernels,
        "converts_on_load": op.load_converts,
        "in_place": op.in_place,
        "loss_scale_role": op.role,
        "gradient": "rule" if op.gradients else ("code" if op.differentiable else None),
    }


# ---------------------------------------------------------------------------
# C++ tables
# ---------------------------------------------------------------------------

KIND_ENUM = {"float": "Float", "int": "Int", "bool": "Bool", "flag": "Flag", "string": "String",
             "ints": "Ints", "pair": "Pair", "single": "Single", "triple": "Triple",
             "dim": "Dim", "dims": "Dims", "dtype": "DType"}
ROLE_ENUM = {"none": "None", "seed": "Seed", "gradient_consumer": "GradientConsumer",
             "unscale": "Unscale", "scale_update": "ScaleUpdate"}
CLASS_ENUM = {"lower": "Lower", "fp32": "FP32", "promote": "Promote", "follow": "Follow"}


def string_array(out, name, values):
    if not values:
        return "{}"
    out.append("const ::llvm::StringLiteral %s[] = {%s};" % (name, ", ".join(map(cstr, values))))
    return name


def gen_info(ops):
    out = ["// Generated by gen-op-tables.py from the tg op records. Do not edit.",
           "namespace {"]
    entries = []
    for i, op in enumerate(ops):
        kernels = string_array(out, "kKernels%d" % i, op.kernels)
        converts = string_array(out, "kLoadConverts%d" % i, op.load_converts)
        in_place = string_array(out, "kInPlace%d" % i, op.in_place)
        operands = string_array(out, "kOperands%d" % i, [n for n, _ in op.operands])
        kw_items = []
        for j, kw in enumerate(op.keywords):
            allowed = string_array(out, "kAllowed%d_%d" % (i, j), kw["allowed"])
            kw_items.append("{%s, ::ampc::tg::KeywordKind::%s, %s, %s}" % (
                cstr(kw["name"]), KIND_ENUM[kw["kind"]], cstr(kw["default"]), allowed))
        keywords = "{}"
        if kw_items:
            keywords = "kKeywords%d" % i
            out.append("const ::ampc::tg::KeywordInfo %s[] = {%s};" % (keywords,
                                                                     ", ".join(kw_items)))
        lo, hi = op.operand_range(language=True)
        entries.append(
            "  {%s, %s, ::ampc::tg::LossScaleRole::%s, %s, %s, %s, %s, %s, %s, %s, %s, %d, %s, "
            "%s, %s, %s, %s, %s, %s}," % (
                cstr(op.name), cstr(op.amp_class), ROLE_ENUM[op.role], kernels, converts,
                in_place, cstr(op.language), cstr(op.elementwise), cstr(op.torch), operands,
                keywords, lo, "::ampc::tg::OpInfo::kVariadic" if hi is None else str(hi),
                "true" if op.training else "false",
                "true" if op.custom_frontend else "false",
                "true" if bool(op.gradients) else "false",
                "true" if op.differentiable else "false",
                "true" if op.float_only_kernel else "false",
                "true" if op.o2_kept_f32 else "false"))
    out.append("} // namespace")
    out.append("")
    out.append("static const ::ampc::tg::OpInfo kOpInfos[] = {")
    out.extend(entries)
    out.append("};")
    out.append("")

    # In-place operands: result i reuses the i-th operand of the groups.
    out.append("static std::optional<unsigned> inPlaceOperandOf(::mlir::Operation *op, "
               "unsigned resultIndex) {")
    for op in ops:
        if not op.in_place:
            continue
        groups = ", ".join("o.getODSOperandIndexAndLength(%d)" % op.operand_group(n)
                           for n in op.in_place)
        out.append("  if (auto o = ::llvm::dyn_cast<::ampc::tg::%s>(op))" % op.cpp)
        out.append("    return inPlaceFromGroups(op, resultIndex, {%s});" % groups)
    out.append("  return std::nullopt;")
    out.append("}")
    out.append("")
    # Load conversion.
    out.append("static bool convertsOnLoad(::mlir::Operation *op, unsigned operandNumber) {")
    out.append("  auto in = [operandNumber](std::pair<unsigned, unsigned> r) {")
    out.append("    return operandNumber >= r.first && operandNumber < r.first + r.second;")
    out.append("  };")
    out.append("  (void)in;")
    every = [op.cpp for op in ops if "*" in op.load_converts]
    for op in ops:
        named = [n for n in op.load_converts if n != "*"]
        if not named or "*" in op.load_converts:
            continue
        cond = " || ".join("in(o.getODSOperandIndexAndLength(%d))" % op.operand_group(n)
                           for n in named)
        out.append("  if (auto o = ::llvm::dyn_cast<::ampc::tg::%s>(op))" % op.cpp)
        out.append("    return %s;" % cond)
    if every:
        out.append("  return ::llvm::isa<%s>(op);" % ", ".join("::ampc::tg::" + c for c in every))
    else:
        out.append("  return false;")
    out.append("}")
    return "\n".join(out) + "\n"


def gen_amp_classes(ops):
    out = ["// Generated by gen-op-tables.py from the tg op records. Do not edit.",
           "// TG_AMP_CLASS(NAME, CLASS): the default AMP class of each tg op.",
           "#ifndef TG_AMP_CLASS",
           "#error define TG_AMP_CLASS(NAME, CLASS) before including TGAmpClasses.inc",
           "#endif"]
    for op in ops:
        out.append("TG_AMP_CLASS(%s, %s)" % (cstr(op.name), CLASS_ENUM[op.amp_class]))
    out.append("#undef TG_AMP_CLASS")
    return "\n".join(out) + "\n"


# ---------------------------------------------------------------------------
# Gradient rules
# ---------------------------------------------------------------------------

class GradGen:
    """C++ of one op's gradient DAGs."""

    def __init__(self, recs, by_def, op):
        self.recs, self.op = recs, op
        self.by_mnemonic = {o.mnemonic: o for o in by_def.values()}
        self.lines = []
        self.counter = 0
        self.shared = {}

    def err(self, msg):
        raise RecordError("%s: gradient of '%s': %s" % (self.op.loc, self.op.name, msg))

    def key(self, node):
        return json.dumps(node, sort_keys=True)

    def fresh(self):
        self.counter += 1
        return "v%d" % self.counter

    def leaf(self, name):
        if name == "dy":
            return "dy"
        if name == "result":
            return "getOperation()->getResult(0)"
        names = [n for n, _ in self.op.operands]
        if name in names:
            return "getOperation()->getOperand(%d)" % names.index(name)
        self.err("unknown leaf '$%s' (leaves: $dy, $result, %s)" % (
            name, ", ".join("$" + n for n in names)))

    def subnodes(self, node):
        """Every dag node under `node` (itself included)."""
        yield node
        for arg, _ in node["args"]:
            if isinstance(arg, dict) and arg.get("kind") == "dag":
                yield from self.subnodes(arg)

    def emit(self, node, indent):
        """Emits `node`; returns a C++ expression of its value (or an
        Operation * for an op node: the caller picks a result)."""
        k = self.key(node)
        if k in self.shared and self.shared[k] is not None:
            return self.shared[k]
        op_rec = self.recs.get(node["operator"])
        opname = op_rec["!name"]
        if self.recs.isa(op_rec, "TGOp"):
            return self.emit_op(node, indent)
        args = self.arguments(node, indent)
        pad = "  " * indent
        v = self.fresh()
        if opname == "TG_Identity":
            if len(args) != 1:
                self.err("TG_Identity takes one value")
            self.lines.append("%sValue %s = %s;" % (pad, v, args[0]))
        elif opname == "TG_SumTo":
            if len(args) != 2:
                self.err("TG_SumTo takes a value and an operand")
            self.lines.append("%sValue %s = gb.sumTo(%s, gb.type(%s).getShape());" % (
                pad, v, args[0], args[1]))
        elif opname == "TG_ReshapeTo":
            if len(args) != 2:
                self.err("TG_ReshapeTo takes a value and an operand")
            self.lines.append("%sValue %s = gb.reshape(%s, gb.type(%s).getShape());" % (
                pad, v, args[0], args[1]))
        elif self.recs.isa(op_rec, "TG_Scalar"):
            if len(args) != 1:
                self.err("TG_Scalar takes one value (whose element type it has)")
            self.lines.append("%sValue %s = gb.scalar(%s, %s);" % (pad, v, op_rec["value"],
                                                                   args[0]))
        elif self.recs.isa(op_rec, "TG_Result"):
            if len(args) != 1 or not isinstance(node["args"][0][0], dict):
                self.err("TG_Result takes one (node)")
            inner = self.emit_op(node["args"][0][0], indent)
            self.lines.append("%sValue %s = %s->getResult(%d);" % (pad, v, inner,
                                                                  op_rec["index"]))
        else:
            self.err("unknown operator '%s'" % opname)
        return v

    def is_scalar(self, arg):
        return isinstance(arg, dict) and arg.get("kind") == "dag" and \
            self.recs.isa(self.recs.get(arg["operator"]), "TG_Scalar")

    def arguments(self, node, indent):
        """The C++ values of a node's arguments. Nodes are built left to
        right, scalar constants after the node's other arguments."""
        args = [None] * len(node["args"])
        for late in (False, True):
            for i, (arg, name) in enumerate(node["args"]):
                if self.is_scalar(arg) != late:
                    continue
                if isinstance(arg, dict) and arg.get("kind") == "dag":
                    args[i] = self.value(arg, indent)
                elif arg is None and name:
                    args[i] = self.leaf(name)
                else:
                    self.err("argument %s is neither a $leaf nor a (node)" % json.dumps(arg))
        return args

    def emit_op(self, node, indent, args=None):
        k = self.key(node)
        if k in self.shared and self.shared[k] is not None:
            return self.shared[k]
        op_rec = self.recs.get(node["operator"])
        if not self.recs.isa(op_rec, "TGOp"):
            self.err("TG_Result needs a (TGOp<...> ...) node")
        target = self.by_mnemonic.get(op_rec["mnemonic"])
        if target is None:
            self.err("no tg op '%s'" % op_rec["mnemonic"])
        if args is None:
            args = self.arguments(node, indent)
        lo, hi = target.operand_range()
        if hi is None or lo != hi:
            self.err("'%s' has optional or variadic operands" % target.name)
        if len(args) != lo:
            self.err("'%s' takes %d operands, the DAG gives %d" % (target.name, lo, len(args)))
        mine = dict(self.op.attrs)
        for name, _ in target.attrs:
            if name not in mine:
                self.err("'%s' needs attribute '%s', which '%s' does not have: write this "
                         "rule in C++" % (target.name, name, self.op.name))
            args.append("get%sAttr()" % camel(name))
        n = "n%d" % (self.counter + 1)
        self.counter += 1
        self.lines.append("%sOperation *%s = %s::create(b, loc, %s).getOperation();" % (
            "  " * indent, n, target.cpp, ", ".join(args)))
        if k in self.shared:
            self.shared[k] = n
        return n

    def value(self, node, indent):
        r = self.emit(node, indent)
        if r.startswith("n"):
            return "%s->getResult(0)" % r
        return r

    def generate(self):
        op = self.op
        lo, hi = op.operand_range()
        if hi is None or lo != hi:
            self.err("gradient DAGs need an op with fixed operands")
        dags = []
        for ref in op.gradients:
            dags.append(None if (ref.get("operator", {}).get("def") == "TG_NoGradient")
                        else ref)
        if len(dags) > lo:
            self.err("%d gradient DAGs for %d operands" % (len(dags), lo))
        # Nodes shared between operand rules are built once, before them.
        seen = {}
        for i, d in enumerate(dags):
            if d is None:
                continue
            for sub in self.subnodes(d):
                if self.recs.isa(self.recs.get(sub["operator"]), "TGOp"):
                    seen.setdefault(self.key(sub), set()).add(i)
        for k, users in seen.items():
            if len(users) > 1:
                self.shared[k] = None
        body = []
        body.append("LogicalResult %s::buildGradient(OpBuilder &builder, "
                    "ArrayRef<Value> resultGrads," % op.cpp)
        body.append("    ArrayRef<bool> wanted, SmallVectorImpl<Value> &operandGrads) {")
        body.append("  initGrads(*this, operandGrads);")
        body.append("  Value dy = resultGrads[0];")
        body.append("  if (!dy)")
        body.append("    return success();")
        if op.needs_float_result:
            body.append("  if (!GradBuilder::isFloatValue(getOperation()->getResult(0)))")
            body.append("    return success();")
        wants = []
        for i in range(lo):
            if i < len(dags) and dags[i] is not None:
                wants.append("wanted[%d] && GradBuilder::isFloatValue(getOperation()->"
                             "getOperand(%d))" % (i, i))
            else:
                wants.append("false")
        body.append("  bool want[] = {%s};" % ", ".join(wants))
        body.append("  if (!llvm::is_contained(want, true))")
        body.append("    return success();")
        body.append("  GradBuilder gb(builder, *this);")
        body.append("  OpBuilder &b = gb.b;")
        body.append("  Location loc = gb.loc;")
        body.append("  (void)b;")
        body.append("  (void)loc;")
        # Shared nodes, in first-use order.
        order = []
        for d in dags:
            if d is None:
                continue
            for sub in self.subnodes(d):
                k = self.key(sub)
                if k in self.shared and k not in order:
                    order.append(k)
        # Inner shared nodes first: emit the deepest first by emitting in
        # reverse discovery order of containment (subnodes yields parents
        # before children).
        for k in reversed(order):
            self.lines = []
            node = json.loads(k)
            self.emit_op(node, 1)
            body.extend(self.lines)
        for i, d in enumerate(dags):
            if d is None:
                continue
            self.lines = []
            v = self.value(d, 2)
            body.append("  if (want[%d]) {" % i)
            body.extend(self.lines)
            body.append("    operandGrads[%d] = gb.fit(%s, getOperation()->getOperand(%d));" %
                        (i, v, i))
            body.append("  }")
        body.append("  return success();")
        body.append("}")
        return "\n".join(body) + "\n"


def gen_gradients(recs, ops):
    by_def = {op.def_name: op for op in ops}
    out = ["// Generated by gen-op-tables.py from the `gradients` of the tg op records.",
           "// Included by TGGradients.cpp after GradBuilder and initGrads. Do not edit."]
    for op in ops:
        if not op.gradients:
            continue
        if not op.differentiable:
            raise RecordError("%s: '%s' has `gradients` but not the TG_Differentiable trait" %
                              (op.loc, op.name))
        out.append(GradGen(recs, by_def, op).generate())
    return "\n".join(out)


# ---------------------------------------------------------------------------

def source_order(op_rec):
    """Forward ops before training ops, each in the order of the .td files
    (a `defm` record is where the defm is)."""
    loc = (op_rec.get("!locs") or ["?:0"])[-1]
    f, _, line = loc.rpartition(":")
    return (op_rec.get("training", 0), 0 if f.endswith("TGOps.td") else 1, f,
            int(line) if line.isdigit() else 0)


def load_ops(path):
    with open(path) as f:
        doc = json.load(f)
    recs = Records(doc)
    names = doc["!instanceof"].get("TG_Op", [])
    records = sorted((doc[n] for n in names), key=source_order)
    return recs, [Op(recs, r) for r in records]


def runtime_kernels(path):
    """{entry point: attribute names or None} of the runtime's kernel table
    (an X-macro file: AMPC_UNARY_KERNEL(NAME, OP, N, (ATTRS)), ...)."""
    with open(path) as f:
        text = re.sub(r"/\*.*?\*/", "", f.read(), flags=re.S)
    kernels = {}
    pairs = "UNARY_KERNEL|BINARY_KERNEL|REDUCTION_KERNEL|SOFTMAX_KERNEL|POOL_KERNEL|CUSTOM_KERNEL"
    for m in re.finditer(r"^\s*AMPC_(%s|ENTRY)\(\s*(\w+)\s*(?:,([^\n]*))?\)\s*$" % pairs,
                         text, flags=re.M):
        family, name, rest = m.group(1), m.group(2), m.group(3) or ""
        if family == "ENTRY":
            kernels["ampc_" + name] = None
            continue
        attrs = None
        if family == "UNARY_KERNEL":
            inner = re.search(r"\(([^()]*)\)\s*$", rest)
            attrs = [a.strip() for a in inner.group(1).split(",") if a.strip()] if inner else []
        kernels["ampc_%s_fwd" % name] = attrs
        kernels["ampc_%s_bwd" % name] = attrs
    return kernels


def check_kernels(ops, path):
    kernels = runtime_kernels(path)
    if not kernels:
        raise RecordError("%s: no kernel entries" % path)
    for op in ops:
        for k in op.kernels:
            if k not in kernels:
                raise RecordError("%s: op '%s' lowers to '%s', which the runtime's kernel table "
                                  "(%s) does not have" % (op.loc, op.name, k,
                                                          os.path.basename(path)))
            want = kernels[k]
            if want is None or op.elementwise != "unary" or op.training:
                continue
            have = [n for n, c in op.attrs]
            if have != want:
                raise RecordError("%s: op '%s' has attributes (%s) but its kernel '%s' takes "
                                  "(%s)" % (op.loc, op.name, ", ".join(have), k, ", ".join(want)))


def gen_kernel_args(ops):
    """TG_KERNEL_ROW(OP, BOUND_OPERAND, BOUND, DIM, ARGS...) per op with
    `kernelArgs` (BOUND_OPERAND -1: no index bound)."""
    out = ["// Generated by gen-op-tables.py from the `kernelArgs` of the tg op records.",
           "// TG_KERNEL_ROW(OP, BOUND_OPERAND, BOUND, DIM, ARGS...): the arguments of",
           "// the op's kernel call, for the lowering (TGToRuntime.cpp). Do not edit."]
    for op in ops:
        if not op.kernel_args:
            continue
        bound = op.index_bound or [-1, 0, 0]
        out.append("TG_KERNEL_ROW(%s, %d, %d, %d, %s)" % (
            op.cpp, bound[0], bound[1], bound[2],
            ", ".join(op.kernel_arg_cpp(a) for a in op.kernel_args)))
    return "\n".join(out) + "\n"


def write_if_changed(path, text):
    if os.path.exists(path):
        with open(path) as f:
            if f.read() == text:
                return
    with open(path, "w") as f:
        f.write(text)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("records", help="llvm-tblgen --dump-json output of TGOps.td")
    ap.add_argument("--outdir", required=True)
    ap.add_argument("--runtime-kernels", metavar="FILE",
                    help="check every kernel a record names against the runtime's table "
                         "(skipped when FILE does not exist)")
    args = ap.parse_args(argv)
    try:
        recs, ops = load_ops(args.records)
        if not ops:
            raise RecordError("no TG_Op records in %s" % args.records)
        if args.runtime_kernels and os.path.exists(args.runtime_kernels):
            check_kernels(ops, args.runtime_kernels)
        doc = {"format": "ampc-ops", "version": 1, "ops": [op_json(op) for op in ops]}
        text = json.dumps(doc, indent=1) + "\n"
        files = {
            "TGAmpClasses.inc": gen_amp_classes(ops),
            "TGOpInfo.cpp.inc": gen_info(ops),
            "TGGradients.inc": gen_gradients(recs, ops),
            "TGKernelArgs.inc": gen_kernel_args(ops),
            "TGOpList.json": text,
            "TGOpList.json.inc": "// Generated by gen-op-tables.py. Do not edit.\n"
                                 "R\"ampcjson(" + text + ")ampcjson\"\n",
        }
    except RecordError as e:
        sys.stderr.write("gen-op-tables: error: %s\n" % e)
        return 1
    os.makedirs(args.outdir, exist_ok=True)
    for name, text in files.items():
        write_if_changed(os.path.join(args.outdir, name), text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
