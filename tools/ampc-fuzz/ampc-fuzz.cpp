//===- ampc-fuzz.cpp - libFuzzer target for the .tg frontend --------------===//
//
// Lexes and parses arbitrary bytes, and checks the frontend's contract on
// every input: no crash (the sanitizers watch memory), exactly one located
// diagnostic on failure and none on success, a location inside the input, a
// printable UTF-8 message, and the structural guarantees of a parsed module.
// A broken contract aborts so that libFuzzer records the input.
//
// Build with clang (libFuzzer ships with it), for example:
//   clang++ -g -O1 -fsanitize=fuzzer,address,undefined -I include \
//     $(llvm-config-22 --cxxflags) lib/Frontend/*.cpp \
//     tools/ampc-fuzz/ampc-fuzz.cpp $(llvm-config-22 --ldflags --libs support)
// Run: ./ampc-fuzz test/Frontend/fuzz-corpus test/Frontend/bad
//
//===----------------------------------------------------------------------===//

#include "ampc/Frontend/Parser.h"

#include "llvm/Support/ConvertUTF.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

using namespace ampc::frontend;

static void check(bool cond, const char *what) {
  if (cond)
    return;
  std::fprintf(stderr, "ampc-fuzz: frontend contract broken: %s\n", what);
  std::abort();
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  llvm::StringRef buffer(reinterpret_cast<const char *>(data), size);
  std::vector<Diagnostic> diags;
  std::unique_ptr<ModuleAST> module = parseModule(buffer, "fuzz.tg", diags);

  if (!module) {
    check(diags.size() == 1, "failure must give exactly one diagnostic");
    const Diagnostic &diag = diags.front();
    size_t lines = std::count(buffer.begin(), buffer.end(), '\n') + 1;
    check(diag.loc.file && *diag.loc.file == "fuzz.tg", "file name lost");
    check(diag.loc.line >= 1 && diag.loc.line <= lines, "line out of range");
    check(diag.loc.col >= 1 && diag.loc.col <= size + 1, "col out of range");
    check(!diag.message.empty(), "empty message");
    const auto *msgBegin =
        reinterpret_cast<const llvm::UTF8 *>(diag.message.data());
    const auto *msgEnd = msgBegin + diag.message.size();
    check(llvm::isLegalUTF8String(&msgBegin, msgEnd),
          "message is not valid UTF-8");
    std::string printed;
    llvm::raw_string_ostream os(printed);
    printDiagnostic(os, diag);
    return 0;
  }

  check(diags.empty(), "success must not give diagnostics");
  for (const GraphAST &graph : module->graphs) {
    check(!graph.stmts.empty() && graph.getReturn(),
          "a graph must end with 'return'");
    unsigned returns = 0, minimizes = 0;
    for (const auto &stmt : graph.stmts) {
      returns += llvm::isa<ReturnStmtAST>(stmt.get());
      minimizes += llvm::isa<MinimizeStmtAST>(stmt.get());
    }
    check(returns == 1, "exactly one 'return'");
    check(minimizes <= 1, "at most one 'minimize'");
  }
  // The dump walks the whole tree recursively: it must survive any tree the
  // parser accepts.
  std::string dumped;
  llvm::raw_string_ostream os(dumped);
  module->dump(os);
  return 0;
}
