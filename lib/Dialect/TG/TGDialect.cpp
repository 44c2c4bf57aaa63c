//===- TGDialect.cpp - the tensor-graph dialect ---------------------------===//
//
// Dialect registration, the `#tg.init` attribute, and verification of the
// discardable attributes (`tg.pin`) and function argument/result attributes
// (`tg.input`, `tg.param`, `tg.init`, `tg.output`, `tg.param_out`).
//
//===----------------------------------------------------------------------===//

#include "ampc/Dialect/TG/TGDialect.h"
#include "ampc/Dialect/TG/TGOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/DialectImplementation.h"
#include "mlir/Interfaces/FunctionInterfaces.h"
#include "llvm/ADT/TypeSwitch.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>

using namespace mlir;
using namespace ampc::tg;

#include "ampc/Dialect/TG/TGDialect.cpp.inc"
#include "ampc/Dialect/TG/TGEnums.cpp.inc"

#define GET_ATTRDEF_CLASSES
#include "ampc/Dialect/TG/TGAttrs.cpp.inc"

void TGDialect::initialize() {
  addOperations<
#define GET_OP_LIST
#include "ampc/Dialect/TG/TGOps.cpp.inc"
      >();
  registerAttributes();
}

void TGDialect::registerAttributes() {
  addAttributes<
#define GET_ATTRDEF_LIST
#include "ampc/Dialect/TG/TGAttrs.cpp.inc"
      >();
}

Operation *TGDialect::materializeConstant(OpBuilder &builder, Attribute value,
                                          Type type, Location loc) {
  auto elements = dyn_cast<ElementsAttr>(value);
  if (!elements || elements.getType() != type)
    return nullptr;
  return ConstantOp::create(builder, loc, elements);
}

//===----------------------------------------------------------------------===//
// #tg.init
//===----------------------------------------------------------------------===//

/// Shortest decimal spelling that reads back as the same double, so the IR
/// shows `0.05` rather than `5.000000e-02` and still round-trips exactly.
static void printShortestDouble(AsmPrinter &printer, double value) {
  char buf[64];
  double magnitude = std::fabs(value);
  bool fixed = magnitude == 0.0 || (magnitude >= 1e-4 && magnitude < 1e15);
  for (int precision = 1; precision <= 17; ++precision) {
    // Plain decimals (`100.0`, `0.05`) where they are short; `%g` otherwise.
    std::snprintf(buf, sizeof(buf), fixed ? "%.*f" : "%.*g", precision, value);
    if (std::strtod(buf, nullptr) == value)
      break;
  }
  std::string text(buf);
  if (fixed) {
    // Trim trailing zeros but keep one digit after the point.
    while (text.size() > 2 && text.back() == '0' &&
           text[text.size() - 2] != '.')
      text.pop_back();
  } else if (text.find('.') == std::string::npos) {
    // MLIR's float literals need a '.' (`1.0e-05`, never `1e-05`).
    size_t exp = text.find_first_of("eE");
    text.insert(exp == std::string::npos ? text.size() : exp, ".0");
  }
  printer << text;
}

Attribute InitAttr::parse(AsmParser &parser, Type) {
  std::string kindName;
  SMLoc kindLoc = parser.getCurrentLocation();
  if (parser.parseLess() || parser.parseKeywordOrString(&kindName))
    return {};
  std::optional<InitKind> kind = symbolizeInitKind(kindName);
  if (!kind) {
    parser.emitError(kindLoc, "unknown initialiser '")
        << kindName << "'; expected zeros, ones, normal, uniform or full";
    return {};
  }
  double a = 0.0, b = 0.0;
  if (*kind == InitKind::normal || *kind == InitKind::uniform) {
    if (parser.parseLParen() || parser.parseFloat(a) || parser.parseComma() ||
        parser.parseFloat(b) || parser.parseRParen())
      return {};
  } else if (*kind == InitKind::full) {
    if (parser.parseLParen() || parser.parseFloat(a) || parser.parseRParen())
      return {};
  }
  if (parser.parseGreater())
    return {};
  return parser.getChecked<InitAttr>(parser.getContext(), *kind, APFloat(a),
                                     APFloat(b));
}

void InitAttr::print(AsmPrinter &printer) const {
  printer << "<" << stringifyInitKind(getKind());
  if (getKind() == InitKind::normal || getKind() == InitKind::uniform) {
    printer << "(";
    printShortestDouble(printer, getFirst());
    printer << ", ";
    printShortestDouble(printer, getSecond());
    printer << ")";
  } else if (getKind() == InitKind::full) {
    printer << "(";
    printShortestDouble(printer, getFirst());
    printer << ")";
  }
  printer << ">";
}

LogicalResult InitAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                               InitKind kind, APFloat first,
                               APFloat second) {
  double a = first.convertToDouble(), b = second.convertToDouble();
  if (!std::isfinite(a) || !std::isfinite(b))
    return emitError() << "initialiser bounds must be finite";
  if (kind == InitKind::normal && b < 0.0)
    return emitError() << "normal(mean, std) needs std >= 0, got " << b;
  if (kind == InitKind::uniform && a > b)
    return emitError() << "uniform(low, high) needs low <= high, got " << a
                       << " > " << b;
  return success();
}

//===----------------------------------------------------------------------===//
// Attribute verification
//===----------------------------------------------------------------------===//

/// `tg.loss_scale` on a function: the configuration the loss-scaling pass
/// applied (the AMP report prints it as is).
static LogicalResult verifyLossScaleAttr(Operation *op, Attribute value) {
  auto emit = [&]() {
    return op->emitOpError("'") << TGDialect::kLossScaleAttrName << "' ";
  };
  if (!isa<FunctionOpInterface>(op))
    return emit() << "belongs on a function";
  auto dict = dyn_cast<DictionaryAttr>(value);
  if (!dict)
    return emit() << "must be a dictionary, got " << value;
  auto mode = dict.getAs<StringAttr>("mode");
  if (!mode || !llvm::is_contained({"dynamic", "static", "none"},
                                   mode.getValue()))
    return emit() << "needs mode = \"dynamic\", \"static\" or \"none\"";
  for (NamedAttribute entry : dict) {
    StringRef key = entry.getName();
    if (key == "mode")
      continue;
    bool isFloat = llvm::is_contained({"init", "scale", "growth_factor",
                                       "backoff_factor", "min_scale",
                                       "max_scale"},
                                      key);
    bool isInt = key == "growth_interval" || key == "hysteresis";
    if (!isFloat && !isInt)
      return emit() << "has an unknown entry '" << key << "'";
    if (isFloat ? !isa<FloatAttr>(entry.getValue())
                : !isa<IntegerAttr>(entry.getValue()))
      return emit() << "entry '" << key << "' must be "
                    << (isFloat ? "a float" : "an integer");
  }
  return success();
}

LogicalResult TGDialect::verifyOperationAttribute(Operation *op,
                                                  NamedAttribute attr) {
  if (attr.getName() == kLossScaleAttrName)
    return verifyLossScaleAttr(op, attr.getValue());
  // Written by ampc-data-parallel.
  if (attr.getName() == kDataParallelAttrName) {
    if (!isa<DictionaryAttr>(attr.getValue()))
      return op->emitOpError("'")
             << kDataParallelAttrName << "' must be a dictionary";
    return success();
  }
  // Written by ampc-buffer-planning (include/ampc/Conversion/BufferPlan.h).
  if (attr.getName() == kOffsetsAttrName) {
    auto offsets = dyn_cast<DenseI64ArrayAttr>(attr.getValue());
    if (!offsets || offsets.size() != static_cast<int64_t>(op->getNumResults()))
      return op->emitOpError("'tg.offsets' must hold one i64 per result");
    return success();
  }
  // Gradient accumulation (ampc-optimizer-expansion): K micro-batches per
  // update, on the function of the step.
  if (attr.getName() == kAccumulateAttrName) {
    auto k = dyn_cast<IntegerAttr>(attr.getValue());
    if (op->getName().getStringRef() != "func.func" || !k || k.getInt() < 2)
      return op->emitOpError("'tg.accumulate' must be an integer >= 2 on a "
                             "function");
    return success();
  }
  if (attr.getName() == kArenaSizeAttrName ||
      attr.getName() == kIntermediateBytesAttrName) {
    if (!isa<IntegerAttr>(attr.getValue()))
      return op->emitOpError("'")
             << attr.getName().getValue() << "' must be an integer";
    return success();
  }
  if (attr.getName() == kRoleAttrName) {
    auto role = dyn_cast<StringAttr>(attr.getValue());
    if (!role || !llvm::is_contained({"amp", "grad", "optimizer", "loss_scale"},
                                     role.getValue()))
      return op->emitOpError("'")
             << kRoleAttrName
             << "' must be one of \"amp\", \"grad\", \"optimizer\", "
                "\"loss_scale\", got "
             << attr.getValue();
    return success();
  }
  if (attr.getName() == kRegionAttrName) {
    auto mode = dyn_cast<StringAttr>(attr.getValue());
    if (!mode || !llvm::is_contained({"off", "fp16", "bf16"}, mode.getValue()))
      return op->emitOpError("'")
             << kRegionAttrName
             << "' must be one of \"off\", \"fp16\", \"bf16\", got "
             << attr.getValue();
    return success();
  }
  if (attr.getName() == kPinAttrName) {
    auto type = dyn_cast<TypeAttr>(attr.getValue());
    if (!type || !isFloatElement(type.getValue()))
      return op->emitOpError("'")
             << kPinAttrName << "' must be one of f32, f16, bf16, got "
             << attr.getValue();
    return success();
  }
  if (attr.getName() == kComputeAttrName) {
    auto type = dyn_cast<TypeAttr>(attr.getValue());
    if (!type || !isFloatElement(type.getValue()))
      return op->emitOpError("'")
             << kComputeAttrName << "' must be one of f32, f16, bf16, got "
             << attr.getValue();
    bool floatResult = llvm::any_of(op->getResultTypes(), [](Type t) {
      auto tensor = dyn_cast<RankedTensorType>(t);
      return isFloatElement(tensor ? tensor.getElementType() : t);
    });
    if (!floatResult || isa<CastOp, ConstantOp>(op))
      return op->emitOpError("'")
             << kComputeAttrName
             << "' needs an op that computes a float result (not a cast or "
                "constant)";
    return success();
  }
  return op->emitOpError("unknown attribute '")
         << attr.getName().getValue() << "'";
}

/// The attribute dictionary of argument `argIndex` of a function-like op.
static DictionaryAttr getArgAttrs(Operation *op, unsigned argIndex) {
  auto all = op->getAttrOfType<ArrayAttr>("arg_attrs");
  if (!all || argIndex >= all.size())
    return {};
  return dyn_cast<DictionaryAttr>(all[argIndex]);
}

LogicalResult TGDialect::verifyRegionArgAttribute(Operation *op, unsigned,
                                                  unsigned argIndex,
                                                  NamedAttribute attr) {
  StringRef name = attr.getName();
  DictionaryAttr siblings = getArgAttrs(op, argIndex);
  if (name == kStateAttrName) {
    if (!isa<StringAttr>(attr.getValue()))
      return op->emitOpError("argument #")
             << argIndex << ": '" << name << "' must be a string";
    if (siblings &&
        (siblings.get(kInputAttrName) || siblings.get(kParamAttrName)))
      return op->emitOpError("argument #")
             << argIndex
             << " cannot be both state and an input or a parameter";
    return success();
  }
  if (name == kBufferAttrName) {
    if (!isa<StringAttr>(attr.getValue()))
      return op->emitOpError("argument #")
             << argIndex << ": '" << name << "' must be a string";
    if (siblings &&
        (siblings.get(kInputAttrName) || siblings.get(kParamAttrName) ||
         siblings.get(kStateAttrName)))
      return op->emitOpError("argument #")
             << argIndex
             << " cannot be both a buffer and an input, a parameter or state";
    return success();
  }
  if (name == kInputAttrName || name == kParamAttrName) {
    if (!isa<StringAttr>(attr.getValue()))
      return op->emitOpError("argument #")
             << argIndex << ": '" << name << "' must be a string";
    if (name == kInputAttrName && siblings && siblings.get(kParamAttrName))
      return op->emitOpError("argument #")
             << argIndex << " cannot be both an input and a parameter";
    return success();
  }
  if (name == kInitAttrName) {
    if (!isa<InitAttr>(attr.getValue()))
      return op->emitOpError("argument #")
             << argIndex << ": '" << name << "' must be a #tg.init";
    // Only state (parameters, and the compiler's own state arguments) is
    // initialised by the runtime; inputs come from the caller.
    if (siblings && !siblings.get(kParamAttrName) &&
        !siblings.get(kStateAttrName) && !siblings.get(kBufferAttrName))
      return op->emitOpError("argument #")
             << argIndex << ": '" << name
             << "' needs a parameter, buffer or state argument";
    return success();
  }
  // Opt level O2: a state argument that is the low model copy of a
  // parameter (ampc-model-copies).
  if (name == kModelOfAttrName) {
    if (!isa<StringAttr>(attr.getValue()))
      return op->emitOpError("argument #")
             << argIndex << ": '" << name << "' must be a string";
    if (siblings && !siblings.get(kStateAttrName))
      return op->emitOpError("argument #")
             << argIndex << ": '" << name << "' needs a state argument";
    return success();
  }
  if (name == kInitValueAttrName) {
    auto value = dyn_cast<DenseElementsAttr>(attr.getValue());
    if (!value)
      return op->emitOpError("argument #")
             << argIndex << ": '" << name << "' must be dense elements";
    if (siblings && !siblings.get(kParamAttrName) &&
        !siblings.get(kBufferAttrName))
      return op->emitOpError("argument #")
             << argIndex << ": '" << name
             << "' needs a parameter or buffer argument";
    auto func = dyn_cast<FunctionOpInterface>(op);
    if (func && argIndex < func.getNumArguments()) {
      auto type = dyn_cast<ShapedType>(func.getArgumentTypes()[argIndex]);
      if (!type || type.getShape() != value.getType().getShape())
        return op->emitOpError("argument #")
               << argIndex << ": '" << name << "' has shape "
               << value.getType() << ", not the argument's";
    }
    return success();
  }
  return op->emitOpError("argument #")
         << argIndex << ": unknown attribute '" << name << "'";
}

LogicalResult TGDialect::verifyRegionResultAttribute(Operation *op, unsigned,
                                                     unsigned resultIndex,
                                                     NamedAttribute attr) {
  StringRef name = attr.getName();
  if (name == kOutputAttrName) {
    auto index = dyn_cast<IntegerAttr>(attr.getValue());
    if (!index || index.getValue().isNegative())
      return op->emitOpError("result #")
             << resultIndex << ": '" << name
             << "' must be a non-negative integer";
    return success();
  }
  if (name == kStateOutAttrName) {
    if (!isa<StringAttr>(attr.getValue()))
      return op->emitOpError("result #")
             << resultIndex << ": '" << name << "' must be a string";
    return success();
  }
  if (name == kParamOutAttrName || name == kBufferOutAttrName) {
    if (!isa<StringAttr>(attr.getValue()))
      return op->emitOpError("result #")
             << resultIndex << ": '" << name << "' must be a string";
    return success();
  }
  return op->emitOpError("result #")
         << resultIndex << ": unknown attribute '" << name << "'";
}
