//===- Parser.cpp - Recursive-descent parser for .tg ----------------------===//
//
// One function per grammar rule of spec/language.md. Every function returns a
// null/false result after reporting an error, and every caller propagates it
// at once, so the first error is the only one.
//
//===----------------------------------------------------------------------===//

#include "ampc/Frontend/Parser.h"

#include "llvm/ADT/Twine.h"
#include "llvm/Support/Casting.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <limits>

using namespace ampc::frontend;

namespace {

/// An expression with the height of its tree, so the parser can bound the
/// height (and with it every later recursive walk) as it builds the tree.
struct ParsedExpr {
  std::unique_ptr<ExprAST> expr;
  unsigned height = 0;

  explicit operator bool() const { return expr != nullptr; }
};

/// Counts one nesting level for as long as it lives.
class NestingScope {
public:
  explicit NestingScope(unsigned &depth) : depth(depth) { ++depth; }
  ~NestingScope() { --depth; }
  NestingScope(const NestingScope &) = delete;
  NestingScope &operator=(const NestingScope &) = delete;

private:
  unsigned &depth;
};

std::string formatLoc(const Location &loc) {
  return std::to_string(loc.line) + ":" + std::to_string(loc.col);
}

bool isReservedWord(const Token &tok) {
  switch (tok.kind) {
  case TokenKind::DTypeName:
  case TokenKind::KwGraph:
  case TokenKind::KwParam:
  case TokenKind::KwReturn:
  case TokenKind::KwMinimize:
  case TokenKind::KwWith:
  case TokenKind::KwTrue:
  case TokenKind::KwFalse:
    return true;
  default:
    return false;
  }
}

NumberLiteral literalFrom(const Token &tok) {
  NumberLiteral lit;
  lit.value = tok.numberValue;
  lit.isInteger = tok.is(TokenKind::Integer);
  lit.intValue = tok.intValue;
  lit.spelling = tok.spelling.str();
  return lit;
}

class Parser {
public:
  Parser(llvm::StringRef buffer, std::shared_ptr<std::string> file,
         std::vector<Diagnostic> &diags, const ParseOptions &options)
      : lexer(buffer, std::move(file)), diags(diags),
        maxDepth(std::max(1u, options.maxNestingDepth)) {
    cur = lexer.lex();
  }

  std::unique_ptr<ModuleAST> parseModule();

private:
  //===--- Token handling -------------------------------------------------===//

  bool is(TokenKind kind) const { return cur.kind == kind; }

  void consume() {
    if (ahead) {
      cur = std::move(*ahead);
      ahead.reset();
    } else {
      cur = lexer.lex();
    }
  }

  bool consumeIf(TokenKind kind) {
    if (!is(kind))
      return false;
    consume();
    return true;
  }

  const Token &peek() {
    if (!ahead)
      ahead = lexer.lex();
    return *ahead;
  }

  //===--- Errors ---------------------------------------------------------===//

  /// Records the (single) diagnostic. Always returns false so that callers
  /// can `return error(...)`.
  bool error(const Location &loc, const llvm::Twine &message) {
    if (!failed)
      diags.push_back(Diagnostic{loc, message.str()});
    failed = true;
    return false;
  }

  /// Reports `message` at `tok`, unless `tok` is itself a lexer error: then
  /// the lexer's message is the real problem and wins.
  bool errorAt(const Token &tok, const llvm::Twine &message) {
    if (tok.is(TokenKind::Error))
      return error(tok.loc, tok.message);
    return error(tok.loc, message);
  }

  /// "expected WHAT, found TOKEN" at the current token.
  bool expected(const llvm::Twine &what) {
    return errorAt(cur, "expected " + what + ", found " + describeToken(cur));
  }

  bool expect(TokenKind kind, const llvm::Twine &what) {
    if (consumeIf(kind))
      return true;
    return expected(what);
  }

  /// Consumes an identifier into `name`/`loc`.
  bool expectIdentifier(const llvm::Twine &what, std::string &name,
                        Location &loc) {
    if (isReservedWord(cur))
      return errorAt(cur, "expected " + what + ", found " + describeToken(cur) +
                              ", which is reserved and cannot be a name");
    if (!is(TokenKind::Identifier))
      return expected(what);
    name = cur.spelling.str();
    loc = cur.loc;
    consume();
    return true;
  }

  bool tooDeep(const Location &loc) {
    return error(loc, "nesting too deep: expressions and attribute lists may "
                      "be nested at most " +
                          llvm::Twine(maxDepth) + " levels");
  }

  //===--- Grammar rules --------------------------------------------------===//

  bool parseGraph(GraphAST &graph);
  bool parseArg(ArgAST &arg);
  bool parseType(TypeAST &type);
  std::unique_ptr<StmtAST> parseStmt();
  std::unique_ptr<StmtAST> parseParam();
  bool parseInit(InitSpec &init);
  bool parseSignedNumber(const llvm::Twine &what, NumberLiteral &lit);
  std::unique_ptr<StmtAST> parseAssign();
  std::unique_ptr<StmtAST> parseMinimize();
  std::unique_ptr<StmtAST> parseReturn();
  std::unique_ptr<StmtAST> parseRegion();
  /// True at `autocast (`, where a region starts (`autocast` is a word only
  /// there, so a graph may still name a value `autocast`).
  bool atRegion() {
    return is(TokenKind::Identifier) && cur.spelling == "autocast" &&
           peek().is(TokenKind::LParen);
  }

  ParsedExpr parseExpr();
  ParsedExpr parseTerm();
  ParsedExpr parseUnary();
  ParsedExpr parsePrimary();
  ParsedExpr parseCallRest(std::string callee, Location calleeLoc);
  bool parseAttr(AttrAST &attr);

  /// Builds `lhs op rhs`, enforcing the height bound at the operator.
  ParsedExpr makeBinary(ParsedExpr lhs, const Token &opTok, ParsedExpr rhs);

  Lexer lexer;
  Token cur;
  std::optional<Token> ahead;
  std::vector<Diagnostic> &diags;
  unsigned maxDepth;
  unsigned depth = 0;
  bool failed = false;
};

} // namespace

//===----------------------------------------------------------------------===//
// Module and graph
//===----------------------------------------------------------------------===//

std::unique_ptr<ModuleAST> Parser::parseModule() {
  auto module = std::make_unique<ModuleAST>();
  // import := 'import' IDENT '=' STRING, before the graphs. `import` is a
  // word only here (a graph may still name a value `import`).
  while (is(TokenKind::Identifier) && cur.spelling == "import") {
    ImportAST imp;
    imp.loc = cur.loc;
    consume();
    if (!expectIdentifier("a name after 'import'", imp.name, imp.nameLoc))
      return nullptr;
    if (!expect(TokenKind::Equal, "'=' after 'import " + imp.name + "'"))
      return nullptr;
    if (!is(TokenKind::String)) {
      expected("the model's file name as a string after 'import " + imp.name +
               " ='");
      return nullptr;
    }
    imp.path = cur.stringValue;
    imp.pathLoc = cur.loc;
    consume();
    for (const ImportAST &other : module->imports)
      if (other.name == imp.name) {
        error(imp.nameLoc, "'" + imp.name + "' is imported twice (first at " +
                               formatLoc(other.nameLoc) + ")");
        return nullptr;
      }
    module->imports.push_back(std::move(imp));
  }
  while (!is(TokenKind::Eof)) {
    if (!is(TokenKind::KwGraph)) {
      if (is(TokenKind::Identifier) && cur.spelling == "import")
        expected("'graph' (imports come before the graphs)");
      else
        expected("'graph' at top level");
      return nullptr;
    }
    GraphAST graph;
    if (!parseGraph(graph))
      return nullptr;
    module->graphs.push_back(std::move(graph));
  }
  return module;
}

// graph := 'graph' IDENT '(' [arg (',' arg)*] ')' ['->' type (',' type)*]
//          '{' stmt* '}'
bool Parser::parseGraph(GraphAST &graph) {
  graph.loc = cur.loc;
  consume(); // 'graph'
  if (!expectIdentifier("graph name after 'graph'", graph.name, graph.nameLoc))
    return false;
  std::string quotedName = "'" + graph.name + "'";
  if (!expect(TokenKind::LParen, "'(' after graph name " + quotedName))
    return false;

  if (!is(TokenKind::RParen)) {
    do {
      ArgAST arg;
      if (!parseArg(arg))
        return false;
      graph.args.push_back(std::move(arg));
    } while (consumeIf(TokenKind::Comma));
  }
  if (!expect(TokenKind::RParen,
              "',' or ')' in the argument list of graph " + quotedName))
    return false;

  if (consumeIf(TokenKind::Arrow)) {
    do {
      TypeAST type;
      if (!parseType(type))
        return false;
      graph.results.push_back(std::move(type));
    } while (consumeIf(TokenKind::Comma));
    if (!is(TokenKind::LBrace))
      return expected("',' or '{' after the result types of graph " +
                      quotedName);
  } else if (!is(TokenKind::LBrace)) {
    return expected("'->' or '{' after the argument list of graph " +
                    quotedName);
  }
  consume(); // '{'

  const MinimizeStmtAST *minimize = nullptr;
  bool sawReturn = false;
  while (true) {
    if (is(TokenKind::RBrace)) {
      if (!sawReturn)
        return errorAt(cur, "graph " + quotedName +
                                " has no 'return' statement; it must end "
                                "with one");
      consume();
      return true;
    }
    if (sawReturn) {
      if (is(TokenKind::KwReturn))
        return errorAt(cur, "graph " + quotedName +
                                " has more than one 'return' statement");
      if (is(TokenKind::KwParam) || is(TokenKind::KwMinimize) ||
          is(TokenKind::Identifier))
        return errorAt(cur, "statement after 'return': 'return' must be the "
                            "last statement of graph " +
                                quotedName);
      return expected("'}' after the 'return' statement of graph " +
                      quotedName);
    }

    switch (cur.kind) {
    case TokenKind::KwParam:
    case TokenKind::KwReturn:
    case TokenKind::Identifier:
      break;
    case TokenKind::KwMinimize:
      if (minimize)
        return errorAt(cur, "graph " + quotedName +
                                " has more than one 'minimize' statement "
                                "(the first is at " +
                                formatLoc(minimize->loc) + ")");
      break;
    default:
      if (isReservedWord(cur) &&
          (peek().is(TokenKind::Equal) || peek().is(TokenKind::Comma)))
        return errorAt(cur, describeToken(cur) +
                                " is reserved and cannot be assigned to");
      return expected("a statement or '}' in graph " + quotedName);
    }

    std::unique_ptr<StmtAST> stmt = parseStmt();
    if (!stmt)
      return false;
    if (auto *m = llvm::dyn_cast<MinimizeStmtAST>(stmt.get()))
      minimize = m;
    if (llvm::isa<ReturnStmtAST>(stmt.get()))
      sawReturn = true;
    graph.stmts.push_back(std::move(stmt));
  }
}

// arg := IDENT ':' type
bool Parser::parseArg(ArgAST &arg) {
  if (!expectIdentifier("argument name", arg.name, arg.loc))
    return false;
  if (!expect(TokenKind::Colon, "':' after argument name '" + arg.name + "'"))
    return false;
  return parseType(arg.type);
}

// type := DTYPE '[' [INT (',' INT)*] ']'
bool Parser::parseType(TypeAST &type) {
  if (!is(TokenKind::DTypeName)) {
    if (is(TokenKind::Identifier))
      return errorAt(cur, "unknown dtype " + quoteForDiagnostic(cur.spelling) +
                              "; expected one of f64, f32, f16, bf16, i64, "
                              "i32, i16, i8, u8, bool");
    return expected("a type such as 'f32[2, 3]'");
  }
  type.dtype = cur.dtype;
  type.loc = cur.loc;
  std::string dtypeName = cur.spelling.str();
  consume();
  if (!expect(TokenKind::LBracket, "'[' after dtype '" + dtypeName +
                                       "' (a scalar is written '" + dtypeName +
                                       "[]')"))
    return false;
  if (consumeIf(TokenKind::RBracket))
    return true;

  int64_t elements = 1;
  while (true) {
    if (is(TokenKind::Minus)) {
      Token minus = cur;
      consume();
      if (is(TokenKind::Integer) || is(TokenKind::Float))
        return error(minus.loc, "tensor dimension must be a positive integer, "
                                "found -" +
                                    cur.spelling.str());
      return expected("a number after '-'");
    }
    if (is(TokenKind::Float))
      return errorAt(cur, "tensor dimension must be a positive integer, "
                          "found " +
                              describeToken(cur));
    if (!is(TokenKind::Integer))
      return expected(type.shape.empty()
                          ? llvm::Twine("an integer dimension or ']'")
                          : llvm::Twine("an integer dimension after ','"));
    int64_t dim = cur.intValue;
    if (dim <= 0)
      return errorAt(cur, "tensor dimension must be a positive integer, "
                          "found " +
                              cur.spelling.str());
    if (elements > std::numeric_limits<int64_t>::max() / dim)
      return errorAt(cur, "tensor type has too many elements: the product "
                          "of its dimensions does not fit in 64 bits");
    elements *= dim;
    type.shape.push_back(dim);
    consume();
    if (consumeIf(TokenKind::Comma))
      continue;
    if (consumeIf(TokenKind::RBracket))
      return true;
    return expected("',' or ']' in tensor shape");
  }
}

//===----------------------------------------------------------------------===//
// Statements
//===----------------------------------------------------------------------===//

std::unique_ptr<StmtAST> Parser::parseStmt() {
  if (atRegion())
    return parseRegion();
  // `buffer` is a keyword only where a declaration starts (`buffer NAME`),
  // so programs that name a value `buffer` keep their meaning.
  if (is(TokenKind::Identifier) && cur.spelling == "buffer" &&
      peek().is(TokenKind::Identifier))
    return parseParam();
  switch (cur.kind) {
  case TokenKind::KwParam:
    return parseParam();
  case TokenKind::KwMinimize:
    return parseMinimize();
  case TokenKind::KwReturn:
    return parseReturn();
  default:
    return parseAssign();
  }
}

// param  := 'param' IDENT ':' type ['=' init]
// buffer := 'buffer' IDENT ':' type ['=' init]
std::unique_ptr<StmtAST> Parser::parseParam() {
  auto param = std::make_unique<ParamStmtAST>(cur.loc);
  param->isBuffer = !is(TokenKind::KwParam);
  consume(); // 'param' or 'buffer'
  std::string what = param->isBuffer ? "buffer" : "parameter";
  std::string keyword = param->isBuffer ? "buffer" : "param";
  if (!expectIdentifier(what + " name after '" + keyword + "'", param->name,
                        param->nameLoc))
    return nullptr;
  if (!expect(TokenKind::Colon,
              "':' after " + what + " name '" + param->name + "'"))
    return nullptr;
  if (!parseType(param->type))
    return nullptr;
  param->init.loc = param->nameLoc;
  if (consumeIf(TokenKind::Equal)) {
    if (!parseInit(param->init))
      return nullptr;
  }
  return param;
}

// init := 'zeros' | 'ones' | 'normal' '(' NUM ',' NUM ')'
//       | 'uniform' '(' NUM ',' NUM ')'
bool Parser::parseInit(InitSpec &init) {
  static const char *const kInitForms =
      "'zeros', 'ones', 'normal(MEAN, STD)' or 'uniform(LOW, HIGH)'";
  if (!is(TokenKind::Identifier))
    return expected(llvm::Twine("an initializer: ") + kInitForms);
  llvm::StringRef name = cur.spelling;
  init.loc = cur.loc;
  init.isExplicit = true;
  if (name == "zeros" || name == "ones") {
    init.kind = name == "zeros" ? InitSpec::Kind::Zeros : InitSpec::Kind::Ones;
    std::string nameStr = name.str();
    consume();
    // Nothing valid can start with '(' after an init, so this is a mistake,
    // not the next statement.
    if (is(TokenKind::LParen))
      return errorAt(cur, "initializer '" + nameStr + "' takes no arguments");
    return true;
  }
  if (name != "normal" && name != "uniform")
    return errorAt(cur, "unknown initializer " + quoteForDiagnostic(name) +
                            "; expected " + kInitForms);
  bool isNormal = name == "normal";
  init.kind = isNormal ? InitSpec::Kind::Normal : InitSpec::Kind::Uniform;
  consume();
  llvm::StringRef form = isNormal ? "normal(MEAN, STD)" : "uniform(LOW, HIGH)";
  NumberLiteral a, b;
  if (!expect(TokenKind::LParen, "'(' in initializer " + form) ||
      !parseSignedNumber(llvm::Twine("a number for ") +
                             (isNormal ? "MEAN" : "LOW") + " in " + form,
                         a) ||
      !expect(TokenKind::Comma, "',' in initializer " + form))
    return false;
  // The second argument is the one a bad pair is blamed on (its sign is part
  // of it).
  Token second = cur;
  if (!parseSignedNumber(llvm::Twine("a number for ") +
                             (isNormal ? "STD" : "HIGH") + " in " + form,
                         b) ||
      !expect(TokenKind::RParen, "')' to close initializer " + form))
    return false;
  init.a = a.value;
  init.b = b.value;
  // Checked here rather than at run time, where the draw would fail without
  // a location (or silently produce NaNs).
  if (isNormal && !(init.b >= 0.0))
    return errorAt(second, "the standard deviation of 'normal(MEAN, STD)' "
                           "must be >= 0, got " +
                               b.spelling);
  if (!isNormal && !(init.a <= init.b))
    return errorAt(second, "'uniform(LOW, HIGH)' needs LOW <= HIGH, got "
                           "LOW = " +
                               a.spelling + " and HIGH = " + b.spelling);
  return true;
}

// ['-'] NUM, folded into one literal.
bool Parser::parseSignedNumber(const llvm::Twine &what, NumberLiteral &lit) {
  bool negative = false;
  if (is(TokenKind::Minus)) {
    negative = true;
    consume();
  }
  if (!is(TokenKind::Integer) && !is(TokenKind::Float))
    return expected(what);
  lit = literalFrom(cur);
  if (negative) {
    lit.value = -lit.value;
    lit.intValue = -lit.intValue; // Never overflows: intValue >= 0.
    lit.spelling = "-" + lit.spelling;
  }
  consume();
  return true;
}

// assign := IDENT (',' IDENT)* '=' expr [pin]
// pin    := '@' ('f32' | 'f16' | 'bf16')
std::unique_ptr<StmtAST> Parser::parseAssign() {
  auto assign = std::make_unique<AssignStmtAST>(cur.loc);
  NamedLoc first;
  if (!expectIdentifier("a statement", first.name, first.loc))
    return nullptr;
  assign->names.push_back(std::move(first));
  while (consumeIf(TokenKind::Comma)) {
    NamedLoc next;
    if (!expectIdentifier("a name after ',' in assignment", next.name,
                          next.loc))
      return nullptr;
    assign->names.push_back(std::move(next));
  }
  if (!is(TokenKind::Equal)) {
    std::string target = assign->names.back().name;
    expected("'=' or ',' after assignment target '" + target + "'");
    return nullptr;
  }
  consume(); // '='
  ParsedExpr value = parseExpr();
  if (!value)
    return nullptr;
  assign->value = std::move(value.expr);

  if (consumeIf(TokenKind::At)) {
    if (is(TokenKind::DTypeName) &&
        (cur.dtype == DType::F32 || cur.dtype == DType::F16 ||
         cur.dtype == DType::BF16)) {
      assign->pin = cur.dtype;
      assign->pinLoc = cur.loc;
      consume();
    } else if (is(TokenKind::DTypeName)) {
      errorAt(cur, "cannot pin compute precision to '" + cur.spelling.str() +
                       "'; a pin is '@f32', '@f16' or '@bf16'");
      return nullptr;
    } else {
      expected("'f32', 'f16' or 'bf16' after '@'");
      return nullptr;
    }
  }
  return assign;
}

// minimize := 'minimize' IDENT 'with' call ['{' group* '}']
std::unique_ptr<StmtAST> Parser::parseMinimize() {
  auto minimize = std::make_unique<MinimizeStmtAST>(cur.loc);
  consume(); // 'minimize'
  if (!expectIdentifier("loss name after 'minimize'", minimize->loss.name,
                        minimize->loss.loc))
    return nullptr;
  if (!expect(TokenKind::KwWith,
              "'with' after 'minimize " + minimize->loss.name + "'"))
    return nullptr;
  std::string optName;
  Location optLoc;
  if (!expectIdentifier("an optimizer call such as 'sgd(lr = 0.1)' after "
                        "'with'",
                        optName, optLoc))
    return nullptr;
  if (!is(TokenKind::LParen)) {
    expected("'(' after optimizer name '" + optName + "'");
    return nullptr;
  }
  ParsedExpr call = parseCallRest(std::move(optName), std::move(optLoc));
  if (!call)
    return nullptr;
  minimize->optimizer.reset(llvm::cast<CallExprAST>(call.expr.release()));
  // Parameter groups: '{' group* '}' with
  // group := 'group' '(' IDENT (',' IDENT)* (',' IDENT '=' attr)* ')'.
  if (consumeIf(TokenKind::LBrace)) {
    while (!is(TokenKind::RBrace)) {
      if (!is(TokenKind::Identifier) || cur.spelling != "group" ||
          !peek().is(TokenKind::LParen)) {
        expected("'group(PARAM, ..., NAME = VALUE, ...)' or '}' in the "
                 "parameter groups of 'minimize'");
        return nullptr;
      }
      Location groupLoc = cur.loc;
      consume(); // 'group'
      ParsedExpr group = parseCallRest("group", std::move(groupLoc));
      if (!group)
        return nullptr;
      minimize->groups.emplace_back(
          llvm::cast<CallExprAST>(group.expr.release()));
    }
    consume(); // '}'
  }
  return minimize;
}

// region := 'autocast' '(' ('off' | 'fp16' | 'bf16') ')'
//           '{' (assign | region)* '}'
std::unique_ptr<StmtAST> Parser::parseRegion() {
  auto region = std::make_unique<RegionStmtAST>(cur.loc);
  // Regions nest like expressions: the same bound keeps every walk over
  // them shallow.
  NestingScope scope(depth);
  if (depth > maxDepth) {
    error(cur.loc, "nesting too deep: autocast blocks may be nested at most " +
                       llvm::Twine(maxDepth) + " levels");
    return nullptr;
  }
  consume(); // 'autocast'
  consume(); // '('
  // `bf16` lexes as a dtype name, `off` and `fp16` as identifiers.
  llvm::StringRef word =
      is(TokenKind::Identifier) || is(TokenKind::DTypeName) ? cur.spelling
                                                             : "";
  if (word == "off")
    region->mode = AutocastMode::Off;
  else if (word == "fp16")
    region->mode = AutocastMode::FP16;
  else if (word == "bf16")
    region->mode = AutocastMode::BF16;
  else if (!word.empty()) {
    std::string hint;
    if (word == "f16" || word == "half" || word == "float16")
      hint = " (an f16 region is written 'autocast(fp16)')";
    else if (word == "f32" || word == "float32" || word == "fp32")
      hint = " (a region computing in f32 is written 'autocast(off)')";
    else if (word == "bfloat16")
      hint = " (a bf16 region is written 'autocast(bf16)')";
    errorAt(cur, "unknown autocast mode " + quoteForDiagnostic(word) +
                     "; expected 'off', 'fp16' or 'bf16'" + hint);
    return nullptr;
  } else {
    expected("an autocast mode ('off', 'fp16' or 'bf16') after 'autocast('");
    return nullptr;
  }
  region->modeLoc = cur.loc;
  consume();
  std::string head = "autocast(" + toString(region->mode).str() + ")";
  if (!expect(TokenKind::RParen, "')' after 'autocast(" +
                                     toString(region->mode) + "'") ||
      !expect(TokenKind::LBrace, "'{' after '" + head + "'"))
    return nullptr;
  std::string opened =
      "the '" + head + "' block opened at " + formatLoc(region->loc);
  while (!consumeIf(TokenKind::RBrace)) {
    if (atRegion()) {
      std::unique_ptr<StmtAST> inner = parseRegion();
      if (!inner)
        return nullptr;
      region->stmts.push_back(std::move(inner));
      continue;
    }
    switch (cur.kind) {
    case TokenKind::Eof:
      errorAt(cur, "unclosed '" + head + "' block: expected '}' to close " +
                       opened + ", found end of file");
      return nullptr;
    case TokenKind::KwParam:
    case TokenKind::KwMinimize:
    case TokenKind::KwReturn:
      errorAt(cur, "'" + cur.spelling.str() + "' cannot be inside " + opened +
                       ": only assignments and nested 'autocast' blocks may "
                       "be; close the block with '}' first");
      return nullptr;
    case TokenKind::Identifier:
      if (cur.spelling == "buffer" && peek().is(TokenKind::Identifier)) {
        errorAt(cur, "'buffer' cannot be inside " + opened +
                         ": only assignments and nested 'autocast' blocks "
                         "may be; close the block with '}' first");
        return nullptr;
      }
      break;
    default:
      if (isReservedWord(cur) &&
          (peek().is(TokenKind::Equal) || peek().is(TokenKind::Comma))) {
        errorAt(cur, describeToken(cur) +
                         " is reserved and cannot be assigned to");
        return nullptr;
      }
      expected("an assignment, an 'autocast' block or '}' in " + opened);
      return nullptr;
    }
    std::unique_ptr<StmtAST> assign = parseAssign();
    if (!assign)
      return nullptr;
    region->stmts.push_back(std::move(assign));
  }
  return region;
}

// return := 'return' expr (',' expr)*
std::unique_ptr<StmtAST> Parser::parseReturn() {
  auto ret = std::make_unique<ReturnStmtAST>(cur.loc);
  consume(); // 'return'
  do {
    ParsedExpr value = parseExpr();
    if (!value)
      return nullptr;
    ret->values.push_back(std::move(value.expr));
  } while (consumeIf(TokenKind::Comma));
  return ret;
}

//===----------------------------------------------------------------------===//
// Expressions
//===----------------------------------------------------------------------===//

ParsedExpr Parser::makeBinary(ParsedExpr lhs, const Token &opTok,
                              ParsedExpr rhs) {
  unsigned height = std::max(lhs.height, rhs.height) + 1;
  if (height > maxDepth) {
    tooDeep(opTok.loc);
    return {};
  }
  char op = opTok.spelling.empty() ? '?' : opTok.spelling.front();
  return {std::make_unique<BinaryExprAST>(opTok.loc, op, std::move(lhs.expr),
                                          std::move(rhs.expr)),
          height};
}

// expr := term (('+' | '-') term)*
ParsedExpr Parser::parseExpr() {
  ParsedExpr lhs = parseTerm();
  if (!lhs)
    return {};
  while (is(TokenKind::Plus) || is(TokenKind::Minus)) {
    Token opTok = cur;
    consume();
    ParsedExpr rhs = parseTerm();
    if (!rhs)
      return {};
    lhs = makeBinary(std::move(lhs), opTok, std::move(rhs));
    if (!lhs)
      return {};
  }
  return lhs;
}

// term := unary (('*' | '/' | '@') unary)*
// `@` followed by a dtype keyword is not a product: it is the pin that ends
// the assignment (`y = a @ b @f16`).
ParsedExpr Parser::parseTerm() {
  ParsedExpr lhs = parseUnary();
  if (!lhs)
    return {};
  while (is(TokenKind::Star) || is(TokenKind::Slash) ||
         (is(TokenKind::At) && !peek().is(TokenKind::DTypeName))) {
    Token opTok = cur;
    consume();
    ParsedExpr rhs = parseUnary();
    if (!rhs)
      return {};
    lhs = makeBinary(std::move(lhs), opTok, std::move(rhs));
    if (!lhs)
      return {};
  }
  return lhs;
}

// unary := '-' unary | primary
ParsedExpr Parser::parseUnary() {
  // Every level of parentheses, call arguments and unary minus passes through
  // here, so this one check bounds the parser's recursion.
  NestingScope scope(depth);
  if (depth > maxDepth) {
    tooDeep(cur.loc);
    return {};
  }
  if (!is(TokenKind::Minus))
    return parsePrimary();
  Location loc = cur.loc;
  consume();
  ParsedExpr operand = parseUnary();
  if (!operand)
    return {};
  unsigned height = operand.height + 1;
  if (height > maxDepth) {
    tooDeep(loc);
    return {};
  }
  return {std::make_unique<NegExprAST>(loc, std::move(operand.expr)), height};
}

// primary := NUM | IDENT | call | '(' expr ')'
ParsedExpr Parser::parsePrimary() {
  switch (cur.kind) {
  case TokenKind::Integer:
  case TokenKind::Float: {
    auto num = std::make_unique<NumberExprAST>(cur.loc, literalFrom(cur));
    consume();
    return {std::move(num), 1};
  }
  case TokenKind::Identifier: {
    std::string name = cur.spelling.str();
    Location loc = cur.loc;
    consume();
    if (is(TokenKind::LParen))
      return parseCallRest(std::move(name), std::move(loc));
    return {std::make_unique<NameExprAST>(std::move(loc), std::move(name)), 1};
  }
  case TokenKind::LParen: {
    Location open = cur.loc;
    consume();
    ParsedExpr inner = parseExpr();
    if (!inner)
      return {};
    if (!expect(TokenKind::RParen,
                "')' to match the '(' at " + formatLoc(open)))
      return {};
    return inner;
  }
  default:
    expected("an expression");
    return {};
  }
}

// call    := IDENT '(' [callarg (',' callarg)*] ')'
// callarg := expr | IDENT '=' attr
ParsedExpr Parser::parseCallRest(std::string callee, Location calleeLoc) {
  auto call = std::make_unique<CallExprAST>(calleeLoc, std::move(callee));
  std::string quotedCallee = "'" + call->callee + "'";
  consume(); // '('
  unsigned height = 1;
  if (!is(TokenKind::RParen)) {
    do {
      if (is(TokenKind::Identifier) && peek().is(TokenKind::Equal)) {
        KeywordArg kwarg;
        kwarg.name = cur.spelling.str();
        kwarg.loc = cur.loc;
        for (const KeywordArg &prev : call->kwargs) {
          if (prev.name == kwarg.name) {
            errorAt(cur, "duplicate keyword attribute '" + kwarg.name +
                             "' in call to " + quotedCallee +
                             " (the first is at " + formatLoc(prev.loc) + ")");
            return {};
          }
        }
        consume(); // name
        consume(); // '='
        if (!parseAttr(kwarg.value))
          return {};
        call->kwargs.push_back(std::move(kwarg));
        continue;
      }
      if (!call->kwargs.empty()) {
        bool startsExpr = is(TokenKind::Integer) || is(TokenKind::Float) ||
                          is(TokenKind::Identifier) || is(TokenKind::LParen) ||
                          is(TokenKind::Minus);
        if (!startsExpr) {
          expected("a keyword attribute 'NAME = VALUE'");
          return {};
        }
        errorAt(cur, "positional operand after keyword attribute '" +
                         call->kwargs.back().name + "' in call to " +
                         quotedCallee +
                         "; positional operands must come first");
        return {};
      }
      ParsedExpr arg = parseExpr();
      if (!arg)
        return {};
      height = std::max(height, arg.height + 1);
      call->args.push_back(std::move(arg.expr));
    } while (consumeIf(TokenKind::Comma));
  }
  if (!expect(TokenKind::RParen,
              "',' or ')' in the argument list of " + quotedCallee))
    return {};
  if (height > maxDepth) {
    tooDeep(calleeLoc);
    return {};
  }
  return {std::move(call), height};
}

// attr := NUM | STRING | 'true' | 'false' | DTYPE | '[' [attr (',' attr)*] ']'
// plus '-' NUM for negative numbers.
bool Parser::parseAttr(AttrAST &attr) {
  NestingScope scope(depth);
  if (depth > maxDepth)
    return tooDeep(cur.loc);
  attr.loc = cur.loc;
  switch (cur.kind) {
  case TokenKind::Integer:
  case TokenKind::Float:
  case TokenKind::Minus:
    attr.kind = AttrAST::Kind::Number;
    return parseSignedNumber("a number after '-'", attr.number);
  case TokenKind::String:
    attr.kind = AttrAST::Kind::String;
    attr.string = cur.stringValue;
    consume();
    return true;
  case TokenKind::KwTrue:
  case TokenKind::KwFalse:
    attr.kind = AttrAST::Kind::Bool;
    attr.boolean = is(TokenKind::KwTrue);
    consume();
    return true;
  case TokenKind::DTypeName:
    attr.kind = AttrAST::Kind::DType;
    attr.dtype = cur.dtype;
    consume();
    return true;
  case TokenKind::LBracket: {
    attr.kind = AttrAST::Kind::List;
    Location open = cur.loc;
    consume();
    if (consumeIf(TokenKind::RBracket))
      return true;
    do {
      AttrAST elem;
      if (!parseAttr(elem))
        return false;
      attr.list.push_back(std::move(elem));
    } while (consumeIf(TokenKind::Comma));
    return expect(TokenKind::RBracket,
                  "',' or ']' in the list opened at " + formatLoc(open));
  }
  case TokenKind::Identifier:
    // `inf` is the one number without a literal (norm's p=inf).
    if (cur.spelling == "inf") {
      attr.kind = AttrAST::Kind::Number;
      attr.number.value = std::numeric_limits<double>::infinity();
      attr.number.spelling = "inf";
      consume();
      return true;
    }
    return errorAt(cur, "expected an attribute value (number, string, true, "
                        "false, dtype or list), found " +
                            describeToken(cur) +
                            "; strings are quoted, as in "
                            "\"" +
                            cur.spelling.take_front(64).str() + "\"");
  default:
    return expected("an attribute value (number, string, true, false, dtype "
                    "or list)");
  }
}

//===----------------------------------------------------------------------===//
// Entry points
//===----------------------------------------------------------------------===//

std::unique_ptr<ModuleAST>
ampc::frontend::parseModule(llvm::StringRef buffer, llvm::StringRef filename,
                            std::vector<Diagnostic> &diags,
                            const ParseOptions &options) {
  auto file = std::make_shared<std::string>(filename.str());
  Parser parser(buffer, std::move(file), diags, options);
  return parser.parseModule();
}

void ampc::frontend::printDiagnostic(llvm::raw_ostream &os,
                                     const Diagnostic &diag) {
  os << (diag.loc.file ? *diag.loc.file : std::string("<unknown>")) << ":"
     << diag.loc.line << ":" << diag.loc.col << ": error: " << diag.message
     << "\n";
}
