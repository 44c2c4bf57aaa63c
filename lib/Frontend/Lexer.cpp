//===- Lexer.cpp - Lexer for the .tg language -----------------------------===//
//
// Every loop below checks `pos < buffer.size()` before looking at a byte: the
// buffer need not be NUL-terminated and may contain NUL bytes.
//
//===----------------------------------------------------------------------===//

#include "ampc/Frontend/Lexer.h"

#include "llvm/ADT/StringSwitch.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/raw_ostream.h"

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <limits>

using namespace ampc::frontend;

llvm::StringRef ampc::frontend::toString(DType dtype) {
  switch (dtype) {
  case DType::F32:
    return "f32";
  case DType::F16:
    return "f16";
  case DType::BF16:
    return "bf16";
  case DType::I32:
    return "i32";
  case DType::I64:
    return "i64";
  case DType::Bool:
    return "bool";
  case DType::F64:
    return "f64";
  case DType::U8:
    return "u8";
  case DType::I8:
    return "i8";
  case DType::I16:
    return "i16";
  }
  return "<invalid dtype>";
}

std::optional<DType> ampc::frontend::parseDType(llvm::StringRef name) {
  return llvm::StringSwitch<std::optional<DType>>(name)
      .Case("f32", DType::F32)
      .Case("f16", DType::F16)
      .Case("bf16", DType::BF16)
      .Case("i32", DType::I32)
      .Case("i64", DType::I64)
      .Case("bool", DType::Bool)
      .Case("f64", DType::F64)
      .Case("u8", DType::U8)
      .Case("i8", DType::I8)
      .Case("i16", DType::I16)
      .Default(std::nullopt);
}

static bool isDigit(char c) { return c >= '0' && c <= '9'; }
static bool isIdentStart(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}
static bool isIdentChar(char c) { return isIdentStart(c) || isDigit(c); }

/// Returns the length of the well-formed UTF-8 sequence starting at `pos`, or
/// 0 if the bytes there are not one (per RFC 3629: no overlong forms, no
/// surrogates, nothing above U+10FFFF, no truncated sequence at the end).
static size_t utf8SequenceLength(llvm::StringRef buf, size_t pos) {
  auto byteAt = [&](size_t i) -> unsigned {
    return static_cast<unsigned char>(buf[pos + i]);
  };
  size_t avail = buf.size() - pos;
  auto cont = [&](size_t i, unsigned lo = 0x80, unsigned hi = 0xBF) {
    return i < avail && byteAt(i) >= lo && byteAt(i) <= hi;
  };
  unsigned c0 = byteAt(0);
  if (c0 < 0x80)
    return 1;
  if (c0 >= 0xC2 && c0 <= 0xDF)
    return cont(1) ? 2 : 0;
  if (c0 == 0xE0)
    return cont(1, 0xA0) && cont(2) ? 3 : 0;
  if ((c0 >= 0xE1 && c0 <= 0xEC) || c0 == 0xEE || c0 == 0xEF)
    return cont(1) && cont(2) ? 3 : 0;
  if (c0 == 0xED)
    return cont(1, 0x80, 0x9F) && cont(2) ? 3 : 0;
  if (c0 == 0xF0)
    return cont(1, 0x90) && cont(2) && cont(3) ? 4 : 0;
  if (c0 >= 0xF1 && c0 <= 0xF3)
    return cont(1) && cont(2) && cont(3) ? 4 : 0;
  if (c0 == 0xF4)
    return cont(1, 0x80, 0x8F) && cont(2) && cont(3) ? 4 : 0;
  return 0;
}

/// Decodes a sequence already validated by utf8SequenceLength.
static uint32_t decodeUtf8(llvm::StringRef buf, size_t pos, size_t len) {
  auto b = [&](size_t i) -> uint32_t {
    return static_cast<unsigned char>(buf[pos + i]);
  };
  switch (len) {
  case 1:
    return b(0);
  case 2:
    return ((b(0) & 0x1F) << 6) | (b(1) & 0x3F);
  case 3:
    return ((b(0) & 0x0F) << 12) | ((b(1) & 0x3F) << 6) | (b(2) & 0x3F);
  default:
    return ((b(0) & 0x07) << 18) | ((b(1) & 0x3F) << 12) |
           ((b(2) & 0x3F) << 6) | (b(3) & 0x3F);
  }
}

static std::string invalidUtf8Message(llvm::StringRef buf, size_t pos) {
  std::string msg;
  llvm::raw_string_ostream os(msg);
  os << "invalid UTF-8 byte "
     << llvm::format_hex(static_cast<unsigned char>(buf[pos]), 4);
  return msg;
}

/// Names the character at `pos` (known to be valid UTF-8 of length `len`) in a
/// way that is safe to print whatever it is: invisible characters such as a
/// byte order mark or a NUL are shown by code point only.
static std::string describeChar(llvm::StringRef buf, size_t pos, size_t len) {
  std::string msg;
  llvm::raw_string_ostream os(msg);
  uint32_t cp = decodeUtf8(buf, pos, len);
  if (cp >= 0x20 && cp < 0x7F)
    os << "character '" << static_cast<char>(cp) << "'";
  else if (cp < 0x80)
    os << "control character " << llvm::format_hex(cp, 4);
  else
    os << "character U+" << llvm::format_hex_no_prefix(cp, 4, /*Upper=*/true);
  return msg;
}

std::string ampc::frontend::quoteForDiagnostic(llvm::StringRef text,
                                               char quote) {
  // Long enough for any sensible token, short enough that pathological input
  // keeps messages readable.
  constexpr size_t kMaxShown = 64;
  bool truncated = false;
  if (text.size() > kMaxShown) {
    size_t cut = kMaxShown;
    // Back off to a character boundary so the message stays valid UTF-8.
    while (cut > 0 && (static_cast<unsigned char>(text[cut]) & 0xC0) == 0x80)
      --cut;
    text = text.take_front(cut);
    truncated = true;
  }
  std::string out;
  out += quote;
  for (char c : text) {
    unsigned char u = static_cast<unsigned char>(c);
    if (u < 0x20 || u == 0x7F) {
      std::string hex;
      llvm::raw_string_ostream(hex)
          << "\\x" << llvm::format_hex_no_prefix(u, 2);
      out += hex;
    } else {
      out += c;
    }
  }
  if (truncated)
    out += "...";
  out += quote;
  return out;
}

std::string ampc::frontend::describeToken(const Token &tok) {
  switch (tok.kind) {
  case TokenKind::Eof:
    return "end of file";
  case TokenKind::Error:
    return "invalid input";
  case TokenKind::Identifier:
    return "identifier " + quoteForDiagnostic(tok.spelling);
  case TokenKind::Integer:
  case TokenKind::Float:
    return "number " + quoteForDiagnostic(tok.spelling);
  case TokenKind::String:
    return "string " +
           quoteForDiagnostic(tok.spelling.drop_front().drop_back(), '"');
  case TokenKind::DTypeName:
    return "dtype '" + tok.spelling.str() + "'";
  case TokenKind::KwGraph:
  case TokenKind::KwParam:
  case TokenKind::KwReturn:
  case TokenKind::KwMinimize:
  case TokenKind::KwWith:
  case TokenKind::KwTrue:
  case TokenKind::KwFalse:
    return "keyword '" + tok.spelling.str() + "'";
  default:
    return "'" + tok.spelling.str() + "'";
  }
}

Lexer::Lexer(llvm::StringRef buffer, std::shared_ptr<std::string> file)
    : buffer(buffer), file(std::move(file)) {}

Location Lexer::locationOf(size_t offset) const {
  // Columns are saturated rather than wrapped for lines over 4 GiB.
  size_t col = offset - lineStart + 1;
  if (col > std::numeric_limits<unsigned>::max())
    col = std::numeric_limits<unsigned>::max();
  return Location{file, line, static_cast<unsigned>(col)};
}

Token Lexer::makeToken(TokenKind kind, size_t start, size_t end) {
  Token tok;
  tok.kind = kind;
  tok.loc = locationOf(start);
  tok.spelling = buffer.slice(start, end);
  pos = end;
  lastTokenEnd = locationOf(end);
  return tok;
}

Token Lexer::makeError(size_t at, std::string message) {
  Token tok;
  tok.kind = TokenKind::Error;
  tok.loc = locationOf(at);
  tok.spelling = buffer.slice(at, at);
  tok.message = std::move(message);
  stickyError = tok;
  return tok;
}

Token Lexer::makeEof() {
  Token tok;
  tok.kind = TokenKind::Eof;
  tok.spelling = buffer.slice(buffer.size(), buffer.size());
  // "Found end of file" is most useful right after the last token, where the
  // missing text belongs, rather than after trailing comments and blank lines.
  tok.loc = lastTokenEnd ? *lastTokenEnd : Location{file, 1, 1};
  return tok;
}

Token Lexer::lex() {
  if (stickyError)
    return *stickyError;
  return lexImpl();
}

Token Lexer::lexImpl() {
  // Skip whitespace and comments.
  while (pos < buffer.size()) {
    char c = buffer[pos];
    if (c == ' ' || c == '\t' || c == '\r') {
      ++pos;
    } else if (c == '\n') {
      ++pos;
      ++line;
      lineStart = pos;
    } else if (c == '#') {
      while (pos < buffer.size() && buffer[pos] != '\n') {
        if (static_cast<unsigned char>(buffer[pos]) < 0x80) {
          ++pos;
          continue;
        }
        size_t len = utf8SequenceLength(buffer, pos);
        if (len == 0)
          return makeError(pos, invalidUtf8Message(buffer, pos));
        pos += len;
      }
    } else {
      break;
    }
  }
  if (pos >= buffer.size())
    return makeEof();

  size_t start = pos;
  char c = buffer[pos];
  if (isIdentStart(c))
    return lexIdentifier(start);
  if (isDigit(c))
    return lexNumber(start);
  if (c == '"')
    return lexString(start);

  switch (c) {
  case '(':
    return makeToken(TokenKind::LParen, start, start + 1);
  case ')':
    return makeToken(TokenKind::RParen, start, start + 1);
  case '[':
    return makeToken(TokenKind::LBracket, start, start + 1);
  case ']':
    return makeToken(TokenKind::RBracket, start, start + 1);
  case '{':
    return makeToken(TokenKind::LBrace, start, start + 1);
  case '}':
    return makeToken(TokenKind::RBrace, start, start + 1);
  case ',':
    return makeToken(TokenKind::Comma, start, start + 1);
  case ':':
    return makeToken(TokenKind::Colon, start, start + 1);
  case '=':
    return makeToken(TokenKind::Equal, start, start + 1);
  case '+':
    return makeToken(TokenKind::Plus, start, start + 1);
  case '*':
    return makeToken(TokenKind::Star, start, start + 1);
  case '/':
    return makeToken(TokenKind::Slash, start, start + 1);
  case '@':
    return makeToken(TokenKind::At, start, start + 1);
  case '-':
    if (start + 1 < buffer.size() && buffer[start + 1] == '>')
      return makeToken(TokenKind::Arrow, start, start + 2);
    return makeToken(TokenKind::Minus, start, start + 1);
  default:
    break;
  }

  size_t len = utf8SequenceLength(buffer, start);
  if (len == 0)
    return makeError(start, invalidUtf8Message(buffer, start));
  return makeError(start, "unexpected " + describeChar(buffer, start, len));
}

Token Lexer::lexIdentifier(size_t start) {
  size_t end = start;
  while (end < buffer.size() && isIdentChar(buffer[end]))
    ++end;
  llvm::StringRef text = buffer.slice(start, end);
  if (std::optional<DType> dtype = parseDType(text)) {
    Token tok = makeToken(TokenKind::DTypeName, start, end);
    tok.dtype = *dtype;
    return tok;
  }
  TokenKind kind = llvm::StringSwitch<TokenKind>(text)
                       .Case("graph", TokenKind::KwGraph)
                       .Case("param", TokenKind::KwParam)
                       .Case("return", TokenKind::KwReturn)
                       .Case("minimize", TokenKind::KwMinimize)
                       .Case("with", TokenKind::KwWith)
                       .Case("true", TokenKind::KwTrue)
                       .Case("false", TokenKind::KwFalse)
                       .Default(TokenKind::Identifier);
  return makeToken(kind, start, end);
}

Token Lexer::lexNumber(size_t start) {
  // NUM := [0-9]+ ('.' [0-9]+)? ([eE] [+-]? [0-9]+)?   (the sign is a separate
  // token; the parser folds it where the grammar allows a negative literal).
  size_t end = start;
  auto digitAt = [&](size_t i) {
    return i < buffer.size() && isDigit(buffer[i]);
  };
  // The maximal run of characters that could be meant as part of this number,
  // so messages about `1.2.3` or `12abc` quote the whole thing.
  auto wholeRun = [&]() {
    size_t e = start;
    while (e < buffer.size() &&
           (isIdentChar(buffer[e]) || buffer[e] == '.' ||
            ((buffer[e] == '+' || buffer[e] == '-') && e > start &&
             (buffer[e - 1] == 'e' || buffer[e - 1] == 'E'))))
      ++e;
    return buffer.slice(start, e);
  };

  while (digitAt(end))
    ++end;
  bool isFloat = false;
  if (end < buffer.size() && buffer[end] == '.') {
    if (!digitAt(end + 1))
      return makeError(start, "expected a digit after '.' in number " +
                                  quoteForDiagnostic(wholeRun()));
    ++end;
    while (digitAt(end))
      ++end;
    isFloat = true;
  }
  if (end < buffer.size() && (buffer[end] == 'e' || buffer[end] == 'E')) {
    size_t expDigits = end + 1;
    if (expDigits < buffer.size() &&
        (buffer[expDigits] == '+' || buffer[expDigits] == '-'))
      ++expDigits;
    if (!digitAt(expDigits))
      return makeError(start, "expected exponent digits in number " +
                                  quoteForDiagnostic(wholeRun()));
    end = expDigits;
    while (digitAt(end))
      ++end;
    isFloat = true;
  }
  if (end < buffer.size() && (isIdentChar(buffer[end]) || buffer[end] == '.'))
    return makeError(start, "invalid number " + quoteForDiagnostic(wholeRun()));

  llvm::StringRef text = buffer.slice(start, end);
  if (!isFloat) {
    int64_t value = 0;
    constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
    for (char d : text) {
      int64_t digit = d - '0';
      if (value > (kMax - digit) / 10)
        return makeError(start, "integer literal " + quoteForDiagnostic(text) +
                                    " does not fit in 64 bits");
      value = value * 10 + digit;
    }
    Token tok = makeToken(TokenKind::Integer, start, end);
    tok.intValue = value;
    tok.numberValue = static_cast<double>(value);
    return tok;
  }

  // strtod needs a NUL-terminated string; the spelling is validated above, so
  // it consumes all of it. Only the "C" locale spelling is ever produced.
  std::string copy = text.str();
  errno = 0;
  double value = std::strtod(copy.c_str(), nullptr);
  if (std::isinf(value))
    return makeError(start, "floating-point literal " +
                                quoteForDiagnostic(text) + " is out of range");
  Token tok = makeToken(TokenKind::Float, start, end);
  tok.numberValue = value;
  return tok;
}

Token Lexer::lexString(size_t start) {
  size_t p = start + 1;
  std::string value;
  while (true) {
    if (p >= buffer.size())
      return makeError(start, "unterminated string literal");
    char c = buffer[p];
    if (c == '"')
      break;
    if (c == '\n')
      return makeError(start, "unterminated string literal (a string cannot "
                              "span lines)");
    if (c == '\\') {
      if (p + 1 >= buffer.size())
        return makeError(start, "unterminated string literal");
      char next = buffer[p + 1];
      if (next == '"' || next == '\\') {
        value += next;
        p += 2;
        continue;
      }
      size_t len = utf8SequenceLength(buffer, p + 1);
      if (len == 0)
        return makeError(p + 1, invalidUtf8Message(buffer, p + 1));
      return makeError(p, "invalid escape sequence: '\\' followed by " +
                              describeChar(buffer, p + 1, len) +
                              "; only \\\" and \\\\ are allowed in strings");
    }
    if (static_cast<unsigned char>(c) < 0x80) {
      value += c;
      ++p;
      continue;
    }
    size_t len = utf8SequenceLength(buffer, p);
    if (len == 0)
      return makeError(p, invalidUtf8Message(buffer, p));
    value.append(buffer.data() + p, len);
    p += len;
  }
  Token tok = makeToken(TokenKind::String, start, p + 1);
  tok.stringValue = std::move(value);
  return tok;
}
