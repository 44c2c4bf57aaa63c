//===- AST.h - AST for the .tg language -------------------------*- C++ -*-===//
//
// Plain structs that mirror the grammar of spec/language.md one to one. The
// parser checks syntax and the structural rules it can see (one `return`, last;
// at most one `minimize`; positional operands before keyword attributes; no
// duplicate keyword attribute; positive static dims). Names, op names, arities,
// shapes and types are left to MLIRGen.
//
// Expressions and statements use LLVM-style RTTI (`llvm::isa`,
// `llvm::dyn_cast`) through their `kind` fields.
//
// Depth: the parser bounds the height of every expression tree and attribute
// list (ParseOptions::maxNestingDepth), so recursive walks over the AST are
// safe.
//
//===----------------------------------------------------------------------===//

#ifndef AMPC_FRONTEND_AST_H
#define AMPC_FRONTEND_AST_H

#include "ampc/Frontend/Lexer.h"

#include "llvm/Support/Casting.h"

#include <cstdint>
#include <iosfwd>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace llvm {
class raw_ostream;
} // namespace llvm

namespace ampc::frontend {

/// A numeric literal. For a negative literal in an attribute, dimension or
/// init position, the sign is folded in: `value` and `intValue` are negative
/// and `spelling` starts with '-'.
struct NumberLiteral {
  double value = 0.0;
  bool isInteger = false;
  /// Valid when isInteger; checked for int64_t overflow by the lexer.
  int64_t intValue = 0;
  /// The exact source spelling, e.g. "1e-5", "0.50", "-3".
  std::string spelling;
};

//===----------------------------------------------------------------------===//
// Types and attributes
//===----------------------------------------------------------------------===//

/// `DTYPE '[' [INT (',' INT)*] ']'`. Every dim is >= 1 and the element count
/// fits in int64_t; an empty shape is a scalar (rank 0).
struct TypeAST {
  DType dtype = DType::F32;
  std::vector<int64_t> shape;
  Location loc; ///< The dtype name.
};

/// A keyword-argument value: `NUM | STRING | true | false | DTYPE | '[' ...
/// ']'`.
struct AttrAST {
  enum class Kind { Number, String, Bool, DType, List };
  Kind kind = Kind::Number;
  Location loc; ///< The first token of the value ('-' for a negative number).

  NumberLiteral number;      ///< Kind::Number.
  std::string string;        ///< Kind::String, escapes resolved.
  bool boolean = false;      ///< Kind::Bool.
  DType dtype = DType::F32;  ///< Kind::DType.
  std::vector<AttrAST> list; ///< Kind::List, in source order.
};

//===----------------------------------------------------------------------===//
// Expressions
//===----------------------------------------------------------------------===//

/// Base class of expressions.
class ExprAST {
public:
  enum class Kind { Number, Name, Call, Binary, Neg };

  ExprAST(Kind kind, Location loc) : kind(kind), loc(std::move(loc)) {}
  virtual ~ExprAST() = default;

  Kind getKind() const { return kind; }
  const Location &getLoc() const { return loc; }

  const Kind kind;
  /// Number/Name: the token; Call: the callee name; Binary: the operator;
  /// Neg: the '-'.
  Location loc;
};

/// A number in an expression. Never negative: `-3` is Neg(Number 3).
class NumberExprAST : public ExprAST {
public:
  NumberExprAST(Location loc, NumberLiteral number)
      : ExprAST(Kind::Number, std::move(loc)), number(std::move(number)) {}
  static bool classof(const ExprAST *e) { return e->kind == Kind::Number; }

  NumberLiteral number;
};

/// A reference to a graph argument, parameter or assigned name.
class NameExprAST : public ExprAST {
public:
  NameExprAST(Location loc, std::string name)
      : ExprAST(Kind::Name, std::move(loc)), name(std::move(name)) {}
  static bool classof(const ExprAST *e) { return e->kind == Kind::Name; }

  std::string name;
};

/// `name = attr` inside a call.
struct KeywordArg {
  std::string name;
  AttrAST value;
  Location loc; ///< The keyword name.
};

/// `callee(positional..., keyword = attr...)`.
class CallExprAST : public ExprAST {
public:
  CallExprAST(Location loc, std::string callee)
      : ExprAST(Kind::Call, std::move(loc)), callee(std::move(callee)) {}
  static bool classof(const ExprAST *e) { return e->kind == Kind::Call; }

  /// Returns the keyword argument called `name`, or nullptr.
  const KeywordArg *findKeyword(llvm::StringRef name) const;

  std::string callee;
  std::vector<std::unique_ptr<ExprAST>> args;
  /// In source order; names are unique.
  std::vector<KeywordArg> kwargs;
};

/// `lhs op rhs` with op one of + - * / (left-associative, usual precedence).
class BinaryExprAST : public ExprAST {
public:
  BinaryExprAST(Location opLoc, char op, std::unique_ptr<ExprAST> lhs,
                std::unique_ptr<ExprAST> rhs)
      : ExprAST(Kind::Binary, std::move(opLoc)), op(op), lhs(std::move(lhs)),
        rhs(std::move(rhs)) {}
  static bool classof(const ExprAST *e) { return e->kind == Kind::Binary; }

  char op;
  std::unique_ptr<ExprAST> lhs, rhs;
};

/// Unary minus.
class NegExprAST : public ExprAST {
public:
  NegExprAST(Location loc, std::unique_ptr<ExprAST> operand)
      : ExprAST(Kind::Neg, std::move(loc)), operand(std::move(operand)) {}
  static bool classof(const ExprAST *e) { return e->kind == Kind::Neg; }

  std::unique_ptr<ExprAST> operand;
};

//===----------------------------------------------------------------------===//
// Statements
//===----------------------------------------------------------------------===//

/// `param`'s initializer.
struct InitSpec {
  enum class Kind { Zeros, Ones, Normal, Uniform };
  Kind kind = Kind::Zeros;
  /// Normal: mean and std; Uniform: low and high; unused otherwise.
  double a = 0.0, b = 0.0;
  /// The initializer name, or the parameter name when the init is implicit.
  Location loc;
  /// False when the source had no `= init` (the default, zeros).
  bool isExplicit = false;
};

/// A name with its location (assignment targets, loss name).
struct NamedLoc {
  std::string name;
  Location loc;
};

/// Base class of statements.
class StmtAST {
public:
  enum class Kind { Param, Assign, Minimize, Return, Region };

  StmtAST(Kind kind, Location loc) : kind(kind), loc(std::move(loc)) {}
  virtual ~StmtAST() = default;

  Kind getKind() const { return kind; }
  const Location &getLoc() const { return loc; }

  const Kind kind;
  /// The first token: 'param', the first assigned name, 'minimize',
  /// 'return', 'autocast'.
  Location loc;
};

/// `param NAME: TYPE [= INIT]`, or `buffer NAME: TYPE [= INIT]`
/// (non-trainable state) when `isBuffer`.
class ParamStmtAST : public StmtAST {
public:
  explicit ParamStmtAST(Location loc) : StmtAST(Kind::Param, std::move(loc)) {}
  static bool classof(const StmtAST *s) { return s->kind == Kind::Param; }

  bool isBuffer = false;
  std::string name;
  Location nameLoc;
  TypeAST type;
  InitSpec init;
};

/// `a [, b ...] = expr [@ dtype]`.
class AssignStmtAST : public StmtAST {
public:
  explicit AssignStmtAST(Location loc)
      : StmtAST(Kind::Assign, std::move(loc)) {}
  static bool classof(const StmtAST *s) { return s->kind == Kind::Assign; }

  /// At least one; more than one only makes sense for multi-result ops such
  /// as `grad` (MLIRGen checks the count).
  std::vector<NamedLoc> names;
  std::unique_ptr<ExprAST> value;
  /// `@f32 | @f16 | @bf16`: the compute precision of the outermost op.
  std::optional<DType> pin;
  Location pinLoc; ///< The dtype after '@' (valid when pin is set).
};

/// `minimize LOSS with OPT(...) [{ group(p, ..., key = value, ...)* }]`.
class MinimizeStmtAST : public StmtAST {
public:
  explicit MinimizeStmtAST(Location loc)
      : StmtAST(Kind::Minimize, std::move(loc)) {}
  static bool classof(const StmtAST *s) { return s->kind == Kind::Minimize; }

  NamedLoc loss;
  std::unique_ptr<CallExprAST> optimizer;
  /// The parameter groups of the optional `{ ... }` block, each parsed as a
  /// call to `group` (positional operands: the params; keywords: overrides).
  std::vector<std::unique_ptr<CallExprAST>> groups;
};

/// `return expr (, expr)*`: always the last statement of a graph.
class ReturnStmtAST : public StmtAST {
public:
  explicit ReturnStmtAST(Location loc)
      : StmtAST(Kind::Return, std::move(loc)) {}
  static bool classof(const StmtAST *s) { return s->kind == Kind::Return; }

  std::vector<std::unique_ptr<ExprAST>> values;
};

/// The mode of an `autocast(MODE) { ... }` block.
enum class AutocastMode { Off, FP16, BF16 };

/// "off", "fp16", "bf16".
llvm::StringRef toString(AutocastMode mode);

/// `autocast '(' ('off' | 'fp16' | 'bf16') ')' '{' (assign | region)* '}'`:
/// the statements of the graph it stands in, with the AMP policy scoped to
/// them (it opens no scope for names). The parser admits only assignments
/// and nested regions inside.
class RegionStmtAST : public StmtAST {
public:
  explicit RegionStmtAST(Location loc)
      : StmtAST(Kind::Region, std::move(loc)) {}
  static bool classof(const StmtAST *s) { return s->kind == Kind::Region; }

  AutocastMode mode = AutocastMode::Off;
  Location modeLoc; ///< The mode word.
  /// AssignStmtAST and RegionStmtAST only, in source order.
  std::vector<std::unique_ptr<StmtAST>> stmts;
};

//===----------------------------------------------------------------------===//
// Graphs and modules
//===----------------------------------------------------------------------===//

/// `name: TYPE` in a graph's argument list.
struct ArgAST {
  std::string name;
  TypeAST type;
  Location loc; ///< The name.
};

/// One `graph`. Its statements end with exactly one ReturnStmtAST and hold at
/// most one MinimizeStmtAST.
struct GraphAST {
  std::string name;
  Location loc;     ///< The 'graph' keyword.
  Location nameLoc; ///< The graph name.
  std::vector<ArgAST> args;
  /// The `-> T1, T2` list; empty when the graph declares no result types.
  std::vector<TypeAST> results;
  std::vector<std::unique_ptr<StmtAST>> stmts;

  /// The return statement (the last statement).
  const ReturnStmtAST *getReturn() const;
  /// The minimize statement, or nullptr for an inference graph.
  const MinimizeStmtAST *getMinimize() const;
};

/// `import NAME = "FILE.onnx"` at top level: an ONNX model callable as
/// `NAME(args...)`.
struct ImportAST {
  std::string name;
  Location loc;     ///< 'import'.
  Location nameLoc; ///< NAME.
  /// The path as written (relative to the importing file).
  std::string path;
  Location pathLoc; ///< The string.
};

/// A whole `.tg` file. Zero graphs is valid (an empty file or only comments).
struct ModuleAST {
  /// The imports, which come before the graphs.
  std::vector<ImportAST> imports;
  std::vector<GraphAST> graphs;

  /// Writes a deterministic, indented dump of the AST with `<LINE:COL>`
  /// locations, for debugging and tests.
  void dump(llvm::raw_ostream &os) const;
  void dump(std::ostream &os) const;
};

/// Dumps one expression (same format as ModuleAST::dump), starting at the
/// given indentation level.
void dumpExpr(llvm::raw_ostream &os, const ExprAST &expr, unsigned indent = 0);

/// Prints an attribute value in source syntax.
void printAttr(llvm::raw_ostream &os, const AttrAST &attr);

} // namespace ampc::frontend

#endif // AMPC_FRONTEND_AST_H
