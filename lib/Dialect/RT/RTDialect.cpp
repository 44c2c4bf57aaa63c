//===- RTDialect.cpp - the runtime-call dialect ----------------------------===//

#include "ampc/Dialect/RT/RTDialect.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/DialectImplementation.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace ampc::rt;

#include "ampc/Dialect/RT/RTOpsDialect.cpp.inc"
#include "ampc/Dialect/RT/RTEnums.cpp.inc"
#define GET_TYPEDEF_CLASSES
#include "ampc/Dialect/RT/RTOpsTypes.cpp.inc"
#define GET_ATTRDEF_CLASSES
#include "ampc/Dialect/RT/RTAttrs.cpp.inc"

void RTDialect::initialize() {
  addTypes<
#define GET_TYPEDEF_LIST
#include "ampc/Dialect/RT/RTOpsTypes.cpp.inc"
      >();
  addAttributes<
#define GET_ATTRDEF_LIST
#include "ampc/Dialect/RT/RTAttrs.cpp.inc"
      >();
  addOperations<
#define GET_OP_LIST
#include "ampc/Dialect/RT/RTOps.cpp.inc"
      >();
}

//===----------------------------------------------------------------------===//
// Attributes
//===----------------------------------------------------------------------===//

/// The ampc_dtype values of runtime.h, in order.
static int32_t dtypeValue(Type t) {
  if (t.isF32())
    return 0;
  if (t.isF16())
    return 1;
  if (t.isBF16())
    return 2;
  if (t.isInteger(32))
    return 3;
  if (t.isInteger(64))
    return 4;
  if (t.isInteger(1))
    return 5;
  if (t.isF64())
    return 6;
  if (t.isUnsignedInteger(8))
    return 7;
  if (t.isInteger(8))
    return 8;
  if (t.isInteger(16))
    return 9;
  return -1;
}

LogicalResult DtypeAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                                Type elementType) {
  if (dtypeValue(elementType) < 0)
    return emitError() << "no runtime dtype for " << elementType
                       << " (expected f64, f32, f16, bf16, i64, i32, i16, i8, "
                          "ui8 or i1)";
  return success();
}

int32_t DtypeAttr::getValue() const { return dtypeValue(getElementType()); }

StringRef DtypeAttr::getSymbol() const {
  static const char *names[] = {"AMPC_F32", "AMPC_F16", "AMPC_BF16",
                                "AMPC_I32", "AMPC_I64", "AMPC_BOOL",
                                "AMPC_F64", "AMPC_U8",  "AMPC_I8",
                                "AMPC_I16"};
  return names[getValue()];
}

//===----------------------------------------------------------------------===//
// Structure
//===----------------------------------------------------------------------===//

SmallVector<SlotOp, 8> ProgramOp::getSlots() {
  return llvm::to_vector<8>(getBody().front().getOps<SlotOp>());
}
InitOp ProgramOp::getInit() {
  auto ops = getBody().front().getOps<InitOp>();
  return ops.empty() ? InitOp() : *ops.begin();
}
StepOp ProgramOp::getStep() {
  auto ops = getBody().front().getOps<StepOp>();
  return ops.empty() ? StepOp() : *ops.begin();
}

LogicalResult ProgramOp::verify() {
  bool seenCode = false;
  unsigned inits = 0, steps = 0;
  for (Operation &op : getBody().front()) {
    if (isa<SlotOp>(op)) {
      if (seenCode)
        return op.emitOpError("must come before 'rt.init' and 'rt.step'");
      continue;
    }
    seenCode = true;
    if (isa<InitOp>(op))
      ++inits;
    else if (isa<StepOp>(op))
      ++steps;
    else
      return op.emitOpError("is not allowed in 'rt.program'");
  }
  if (inits != 1 || steps != 1)
    return emitOpError("needs one 'rt.init' and one 'rt.step'");
  if (auto scale = getLossScaleAttr()) {
    auto slot = dyn_cast_or_null<SlotOp>(lookupSymbol(scale.getAttr()));
    if (!slot)
      return emitOpError("loss_scale ") << scale << " is not a slot";
  }
  return success();
}

static LogicalResult verifyCodeBlock(Operation *op, Region &body) {
  auto program = op->getParentOfType<ProgramOp>();
  size_t slots = program.getSlots().size();
  Block &block = body.front();
  if (block.getNumArguments() != slots + 1)
    return op->emitOpError("expects ")
           << slots + 1 << " block arguments (the " << slots
           << " slots and the arena), got " << block.getNumArguments();
  for (BlockArgument arg : block.getArguments())
    if (!isa<BufferType>(arg.getType()))
      return op->emitOpError("block arguments must be !rt.buffer");
  return success();
}

static void nameCodeBlock(Operation *op, Region &region,
                          OpAsmSetValueNameFn setNameFn) {
  if (region.empty())
    return;
  Block &block = region.front();
  auto program = op->getParentOfType<ProgramOp>();
  if (!program)
    return;
  auto slots = program.getSlots();
  for (BlockArgument arg : block.getArguments()) {
    if (arg.getArgNumber() < slots.size())
      setNameFn(arg, slots[arg.getArgNumber()].getSymName());
    else
      setNameFn(arg, "arena");
  }
}

LogicalResult InitOp::verify() { return verifyCodeBlock(*this, getBody()); }
LogicalResult StepOp::verify() { return verifyCodeBlock(*this, getBody()); }
void InitOp::getAsmBlockArgumentNames(Region &region,
                                      OpAsmSetValueNameFn setNameFn) {
  nameCodeBlock(*this, region, setNameFn);
}
void StepOp::getAsmBlockArgumentNames(Region &region,
                                      OpAsmSetValueNameFn setNameFn) {
  nameCodeBlock(*this, region, setNameFn);
}

void ViewOp::getAsmResultNames(OpAsmSetValueNameFn setNameFn) {
  if (isa<BlockArgument>(getBase()))
    setNameFn(getResult(), "a" + std::to_string(getOffset()));
}

LogicalResult ViewOp::verify() {
  auto arg = dyn_cast<BlockArgument>(getBase());
  if (!arg || arg.getArgNumber() + 1 != arg.getOwner()->getNumArguments())
    return success();
  auto program = (*this)->getParentOfType<ProgramOp>();
  if (!program || !isa<InitOp, StepOp>(arg.getOwner()->getParentOp()))
    return success();
  int64_t size = program.getArenaSize(), offset = getOffset();
  if (offset < 0 || offset >= size)
    return emitOpError("offset ")
           << offset << " is outside the arena of " << size << " bytes";
  return success();
}

void ConstantOp::getAsmResultNames(OpAsmSetValueNameFn setNameFn) {
  setNameFn(getResult(), "cst");
}

//===----------------------------------------------------------------------===//
// rt.call
//
// Stored as `args`, one attribute per C argument, where an index-typed
// IntegerAttr K stands for buffer operand K and an ArrayAttr of them for a
// list of buffers; printed with the operands in place.
//===----------------------------------------------------------------------===//

static bool isOperandRef(Attribute a) {
  auto i = dyn_cast<IntegerAttr>(a);
  return i && i.getType().isIndex();
}

static bool isBufferList(Attribute a) {
  auto list = dyn_cast<ArrayAttr>(a);
  return list && !list.empty() && llvm::all_of(list, isOperandRef);
}

ParseResult CallOp::parse(OpAsmParser &parser, OperationState &result) {
  Builder &b = parser.getBuilder();
  StringAttr callee;
  if (parser.parseAttribute(callee, "callee", result.attributes) ||
      parser.parseLParen())
    return failure();
  SmallVector<OpAsmParser::UnresolvedOperand> operands;
  SmallVector<Attribute> args;
  auto operandRef = [&](OpAsmParser::UnresolvedOperand op) {
    operands.push_back(op);
    return b.getIndexAttr(operands.size() - 1);
  };
  auto parseArg = [&]() -> ParseResult {
    OpAsmParser::UnresolvedOperand operand;
    OptionalParseResult opd = parser.parseOptionalOperand(operand);
    if (opd.has_value()) {
      if (failed(*opd))
        return failure();
      args.push_back(operandRef(operand));
      return success();
    }
    if (succeeded(parser.parseOptionalLSquare())) {
      SmallVector<Attribute> elems;
      auto parseElem = [&]() -> ParseResult {
        OptionalParseResult e = parser.parseOptionalOperand(operand);
        if (e.has_value()) {
          if (failed(*e))
            return failure();
          elems.push_back(operandRef(operand));
          return success();
        }
        Attribute a;
        if (parser.parseAttribute(a))
          return failure();
        elems.push_back(a);
        return success();
      };
      if (failed(parser.parseOptionalRSquare())) {
        if (parser.parseCommaSeparatedList(parseElem) || parser.parseRSquare())
          return failure();
      }
      args.push_back(b.getArrayAttr(elems));
      return success();
    }
    Attribute a;
    if (parser.parseAttribute(a))
      return failure();
    args.push_back(a);
    return success();
  };
  if (failed(parser.parseOptionalRParen())) {
    if (parser.parseCommaSeparatedList(parseArg) || parser.parseRParen())
      return failure();
  }
  result.addAttribute("args", b.getArrayAttr(args));
  if (parser.parseOptionalAttrDict(result.attributes))
    return failure();
  Type buffer = BufferType::get(b.getContext());
  for (auto &op : operands)
    if (parser.resolveOperand(op, buffer, result.operands))
      return failure();
  return success();
}

void CallOp::print(OpAsmPrinter &p) {
  p << " ";
  p.printAttributeWithoutType(getCalleeAttr());
  p << "(";
  auto printOne = [&](Attribute a) {
    if (isOperandRef(a))
      p.printOperand(getBuffers()[cast<IntegerAttr>(a).getInt()]);
    else
      p.printAttribute(a);
  };
  llvm::interleaveComma(getArgs(), p, [&](Attribute a) {
    if (auto list = dyn_cast<ArrayAttr>(a)) {
      p << "[";
      llvm::interleaveComma(list, p, printOne);
      p << "]";
      return;
    }
    printOne(a);
  });
  p << ")";
  p.printOptionalAttrDict((*this)->getAttrs(), {"callee", "args"});
}

LogicalResult CallOp::verify() {
  int64_t n = getBuffers().size();
  auto checkRef = [&](Attribute a) -> LogicalResult {
    int64_t k = cast<IntegerAttr>(a).getInt();
    if (k < 0 || k >= n)
      return emitOpError("argument refers to buffer #") << k << " of " << n;
    return success();
  };
  for (auto [i, a] : llvm::enumerate(getArgs())) {
    if (isOperandRef(a)) {
      if (failed(checkRef(a)))
        return failure();
      continue;
    }
    if (auto list = dyn_cast<ArrayAttr>(a)) {
      if (isBufferList(a)) {
        for (Attribute e : list)
          if (failed(checkRef(e)))
            return failure();
        continue;
      }
      if (!list.empty() && (llvm::all_of(list, llvm::IsaPred<DtypeAttr>) ||
                            llvm::all_of(list, llvm::IsaPred<DenseI64ArrayAttr>)))
        continue;
      return emitOpError("argument #")
             << i << ": a list holds buffers, dtypes or i64 arrays";
    }
    if (isa<ContextAttr, SeedAttr, NullAttr, DtypeAttr, EnumAttr,
            DenseI64ArrayAttr, DenseElementsAttr>(a))
      continue;
    if (auto ia = dyn_cast<IntegerAttr>(a)) {
      auto t = dyn_cast<IntegerType>(ia.getType());
      if (t && ((t.getWidth() == 32 && !t.isUnsigned()) ||
                (t.getWidth() == 64)))
        continue;
    }
    if (auto fa = dyn_cast<FloatAttr>(a))
      if (fa.getType().isF32() || fa.getType().isF64())
        continue;
    return emitOpError("argument #") << i << " (" << a
                                     << ") has no C type of the runtime ABI";
  }
  return success();
}

#define GET_OP_CLASSES
#include "ampc/Dialect/RT/RTOps.cpp.inc"
