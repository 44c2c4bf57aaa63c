//===- Lexer.h - Lexer for the .tg language ---------------------*- C++ -*-===//
//
// A hand-written, on-demand lexer for `.tg` files (spec/language.md). It never
// reads past the end of its buffer, validates UTF-8 everywhere (comments and
// strings included) and reports malformed input as an Error token carrying a
// message, so the parser can stop at the first problem with a precise location.
//
//===----------------------------------------------------------------------===//

#ifndef AMPC_FRONTEND_LEXER_H
#define AMPC_FRONTEND_LEXER_H

#include "llvm/ADT/StringRef.h"

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

namespace ampc::frontend {

/// A position in a source file. `line` and `col` are 1-based; `col` counts
/// bytes, not characters. The file name is shared by all locations of a file so
/// that tokens and AST nodes stay cheap to copy.
struct Location {
  std::shared_ptr<std::string> file;
  unsigned line = 0;
  unsigned col = 0;
};

/// The element types of the language (`DTYPE` in the grammar).
enum class DType { F32, F16, BF16, I32, I64, Bool, F64, U8, I8, I16 };

/// The source spelling of a dtype: "f32", "f16", "bf16", "i32", "i64", "bool".
llvm::StringRef toString(DType dtype);

/// Maps a dtype name to its DType, or std::nullopt if `name` is not one.
std::optional<DType> parseDType(llvm::StringRef name);

/// The kinds of token the lexer produces.
enum class TokenKind {
  Eof,
  /// Malformed input; Token::message says why.
  Error,

  Identifier,
  Integer,
  Float,
  String,
  /// One of the reserved dtype names; Token::dtype says which.
  DTypeName,

  // Keywords.
  KwGraph,
  KwParam,
  KwReturn,
  KwMinimize,
  KwWith,
  KwTrue,
  KwFalse,

  // Punctuation.
  LParen,   // (
  RParen,   // )
  LBracket, // [
  RBracket, // ]
  LBrace,   // {
  RBrace,   // }
  Comma,    // ,
  Colon,    // :
  Equal,    // =
  Plus,     // +
  Minus,    // -
  Star,     // *
  Slash,    // /
  At,       // @
  Arrow,    // ->
};

/// One token. `spelling` points into the lexer's buffer, which must outlive
/// the token.
struct Token {
  TokenKind kind = TokenKind::Eof;
  Location loc;
  /// The exact source bytes of the token (empty for Eof).
  llvm::StringRef spelling;

  /// Integer and Float: the value. Integers are exactly representable up to
  /// 2^53 only, so integer consumers should read `intValue`.
  double numberValue = 0.0;
  /// Integer: the value, checked against int64_t overflow.
  int64_t intValue = 0;
  /// DTypeName: which dtype.
  DType dtype = DType::F32;
  /// String: the contents with escapes resolved (always valid UTF-8).
  std::string stringValue;
  /// Error: the diagnostic message.
  std::string message;

  bool is(TokenKind k) const { return kind == k; }
};

/// A short human-readable description of a token for diagnostics, such as
/// "identifier 'foo'", "number '1.5'", "')'" or "end of file". Long spellings
/// are truncated so that a 10 MB token does not produce a 10 MB message.
std::string describeToken(const Token &tok);

/// Quotes `text` for a diagnostic, truncating it (on a UTF-8 boundary) to a
/// bounded length.
std::string quoteForDiagnostic(llvm::StringRef text, char quote = '\'');

/// Splits a `.tg` buffer into tokens, one at a time. Lexing is linear in the
/// size of the input. After the first Error token, every further call returns
/// the same error again: the parser stops at the first error anyway, and this
/// keeps the lexer from producing tokens from a half-understood position.
class Lexer {
public:
  Lexer(llvm::StringRef buffer, std::shared_ptr<std::string> file);

  /// Returns the next token; Eof (forever) at the end of the buffer. Eof is
  /// located just past the last token (1:1 when there is none).
  Token lex();

private:
  Token lexImpl();
  Token lexNumber(size_t start);
  Token lexString(size_t start);
  Token lexIdentifier(size_t start);
  Token makeToken(TokenKind kind, size_t start, size_t end);
  Token makeError(size_t at, std::string message);
  Token makeEof();
  Location locationOf(size_t offset) const;

  llvm::StringRef buffer;
  std::shared_ptr<std::string> file;
  size_t pos = 0;
  /// Line number and buffer offset of the start of the line containing `pos`;
  /// tokens never span lines, so this gives every token's column in O(1).
  unsigned line = 1;
  size_t lineStart = 0;
  std::optional<Token> stickyError;
  /// Just past the last token produced, where Eof is reported.
  std::optional<Location> lastTokenEnd;
};

} // namespace ampc::frontend

#endif // AMPC_FRONTEND_LEXER_H
