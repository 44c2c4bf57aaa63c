//===- Parser.h - Recursive-descent parser for .tg --------------*- C++ -*-===//
//
// Parses a `.tg` buffer (spec/language.md) into a ModuleAST. The parser stops
// at the first error: one precise message beats a cascade of guesses.
//
//===----------------------------------------------------------------------===//

#ifndef AMPC_FRONTEND_PARSER_H
#define AMPC_FRONTEND_PARSER_H

#include "ampc/Frontend/AST.h"

#include "llvm/ADT/StringRef.h"

#include <memory>
#include <string>
#include <vector>

namespace llvm {
class raw_ostream;
} // namespace llvm

namespace ampc::frontend {

/// One error. Callers print it as `FILE:LINE:COL: error: MESSAGE`
/// (printDiagnostic does exactly that).
struct Diagnostic {
  Location loc;
  std::string message;
};

/// The default bound on expression and attribute-list nesting. It bounds both
/// the parser's recursion and the height of every expression tree (a chain
/// `a + a + ... + a` of N operators is N levels high), so that later
/// recursive passes over the AST cannot overflow the stack either.
constexpr unsigned kDefaultMaxNestingDepth = 256;

/// Knobs for parseModule.
struct ParseOptions {
  /// Deeper input gets a located "nesting too deep" error.
  unsigned maxNestingDepth = kDefaultMaxNestingDepth;
};

/// Parses `buffer` (the contents of `filename`, which is only used for
/// locations). On success returns the module and leaves `diags` untouched; an
/// empty buffer is a valid module with zero graphs. On failure returns nullptr
/// and appends exactly one diagnostic to `diags`. Never crashes, asserts or
/// reads past the end of `buffer` on any bytes; runs in time linear in the
/// buffer size.
std::unique_ptr<ModuleAST> parseModule(llvm::StringRef buffer,
                                       llvm::StringRef filename,
                                       std::vector<Diagnostic> &diags,
                                       const ParseOptions &options = {});

/// Prints `FILE:LINE:COL: error: MESSAGE\n`.
void printDiagnostic(llvm::raw_ostream &os, const Diagnostic &diag);

} // namespace ampc::frontend

#endif // AMPC_FRONTEND_PARSER_H
