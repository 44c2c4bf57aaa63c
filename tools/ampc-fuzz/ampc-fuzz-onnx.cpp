//===- ampc-fuzz-onnx.cpp - libFuzzer target for the ONNX importer --------===//
//
// Takes arbitrary bytes as an ONNX model file and runs what `ampc FILE.onnx`
// runs: the protobuf parse and the ONNX checker (ONNXModel::parse), the
// import into tg IR and the verifier (importONNXModel). Dynamic input dims
// are given the size 2, as `--input-shape` would, so that models with a
// batch dim are imported too. The contract checked on every input: no
// crash (the sanitizers watch memory and undefined behaviour; libFuzzer's
// malloc limit catches allocations sized from the file), at least one
// error on failure and none on success, every error located in the file
// (`fuzz.onnx`, or `fuzz.onnx:NODE` at a node), and a module that verifies
// and prints on success. A broken contract aborts so that libFuzzer records
// the input.
//
// Run: build-asan/bin/ampc-fuzz-onnx CORPUS test/ONNX/Fixtures
//
//===----------------------------------------------------------------------===//

#include "ampc/Frontend/ONNXImport.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/Verifier.h"
#include "llvm/Support/raw_ostream.h"

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <string>
#include <vector>

using namespace mlir;

static void check(bool cond, const char *what) {
  if (cond)
    return;
  std::fprintf(stderr, "ampc-fuzz-onnx: importer contract broken: %s\n",
               what);
  std::abort();
}

/// Whether `loc` names the model file (a FileLineColLoc `fuzz.onnx` or
/// `fuzz.onnx:NODE`, possibly under a NameLoc).
static bool locatedInFile(Location loc) {
  if (auto name = dyn_cast<NameLoc>(loc))
    return locatedInFile(name.getChildLoc());
  if (auto file = dyn_cast<FileLineColLoc>(loc))
    return file.getFilename().getValue().starts_with("fuzz.onnx");
  return false;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  llvm::StringRef bytes(reinterpret_cast<const char *>(data), size);
  MLIRContext ctx(MLIRContext::Threading::DISABLED);
  unsigned errors = 0;
  ScopedDiagnosticHandler handler(&ctx, [&](Diagnostic &diag) {
    if (diag.getSeverity() != DiagnosticSeverity::Error)
      return success();
    ++errors;
    check(locatedInFile(diag.getLocation()), "an error not located in the file");
    check(!diag.str().empty(), "an empty error message");
    return success();
  });

  auto model =
      ampc::onnx_import::ONNXModel::parse(ctx, bytes, "fuzz.onnx", std::nullopt);
  if (!model) {
    check(errors > 0, "parse failed without an error");
    return 0;
  }
  check(errors == 0, "parse succeeded with an error");
  std::map<std::string, std::vector<int64_t>> shapes;
  for (const auto &in : model->getInputs()) {
    std::vector<int64_t> dims(in.dims.begin(), in.dims.end());
    bool dynamic = false;
    for (int64_t &d : dims)
      if (d < 0) {
        d = 2;
        dynamic = true;
      }
    if (dynamic)
      shapes[in.name] = dims;
  }
  OwningOpRef<ModuleOp> module =
      ampc::onnx_import::importONNXModel(ctx, *model, "fuzz.onnx", shapes);
  if (!module) {
    check(errors > 0, "import failed without an error");
    return 0;
  }
  check(errors == 0, "import succeeded with an error");
  check(succeeded(verify(*module)), "an imported module does not verify");
  std::string printed;
  llvm::raw_string_ostream os(printed);
  module->print(os);
  return 0;
}
