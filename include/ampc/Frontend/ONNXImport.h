//===- ONNXImport.h - ONNX models to tg dialect IR --------------*- C++ -*-===//
//
// Reads an ONNX model (protobuf, opset 13-17, default domain) and builds its
// graph as `tg` ops. Float initializers become parameters (batch norms'
// running statistics buffers) whose initial value is the file's data
// (`tg.init_value`); shape computations (Shape, Gather on
// shapes, Constant, ConstantOfShape, Concat, Unsqueeze, ...) are folded on the
// host, so every tensor the graph computes has a static shape. Every op is
// located at its node: `NameLoc(NODE)` around `FILE.onnx:NODE` (a
// FileLineColLoc with line 0), so diagnostics, the AMP report and
// `--emit=dot` name the node.
//
// Two users: `ampc FILE.onnx` (importONNXFile: one inference graph) and the
// `.tg` frontend's `import NAME = "FILE.onnx"` (ONNXModel::emit inlines the
// graph at a call, the call's arguments fixing the input shapes).
//
//===----------------------------------------------------------------------===//

#ifndef AMPC_FRONTEND_ONNXIMPORT_H
#define AMPC_FRONTEND_ONNXIMPORT_H

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OwningOpRef.h"
#include "mlir/Support/LLVM.h"

#include <map>
#include <memory>
#include <string>
#include <vector>

namespace ampc::onnx_import {

/// A graph input that is not an initializer.
struct ModelInput {
  std::string name;
  mlir::Type elementType;
  /// -1 for a dynamic dim (dim_param or no dim_value).
  llvm::SmallVector<int64_t> dims;
  /// Each dim's dim_param ("" for none): dims of one name are equal.
  llvm::SmallVector<std::string> dimParams;
};

/// What an imported model needs from the graph it is built into: its
/// parameters and buffers (created on first use, with the file's values as
/// their initial values), whether the graph trains (says `minimize`), and,
/// in a training graph, the buffers' new values and the graph's dropout.
/// An input's file as `ampc run` read it before compiling (importONNXFile).
struct InputValue {
  std::vector<int64_t> shape;
  /// The values of an integer file (int64 or int32 .npy; bools are not
  /// folded: a Dropout's training_mode stays a run-time input).
  bool isInteger = false;
  std::vector<int64_t> ints;
  /// The values of an f32 file: read where a value must be known at import
  /// (Clip's bounds), a run-time input everywhere else.
  bool isFloat = false;
  std::vector<double> floats;
};

class GraphState {
public:
  virtual ~GraphState();
  /// Whether the graph trains: a training-mode BatchNormalization uses the
  /// batch's statistics and updates its buffers, and a training-mode
  /// Dropout drops, only there.
  virtual bool isTraining() const { return false; }
  /// The trainable parameter `name` (of `init`'s type).
  virtual mlir::Value param(llvm::StringRef name,
                            mlir::DenseElementsAttr init) = 0;
  /// The buffer `name` (non-trainable state) as the graph reads it: its
  /// latest value (the argument, or its last update in this graph).
  virtual mlir::Value buffer(llvm::StringRef name,
                             mlir::DenseElementsAttr init) = 0;
  /// Records `value` as the new value of buffer `name` (training graphs).
  virtual void updateBuffer(llvm::StringRef name, mlir::Value value) {}
  /// `tg.dropout` of `x` with drop probability `p` at `loc` (training
  /// graphs; it takes the graph's dropout step and the next key).
  virtual mlir::Value dropout(mlir::Value x, double p, mlir::Location loc) {
    return x;
  }
};

/// A loaded and checked ONNX model.
class ONNXModel {
public:
  ~ONNXModel();

  /// Reads and checks `path` (protobuf parse, the ONNX checker, opset and
  /// input types). On failure emits one error at `at` (or at the file when
  /// `at` is null) and returns null. `displayPath` names the file in the
  /// locations of the graph's ops.
  static std::unique_ptr<ONNXModel> load(mlir::MLIRContext &ctx,
                                         llvm::StringRef path,
                                         llvm::StringRef displayPath,
                                         std::optional<mlir::Location> at);
  /// As load, from the file's bytes (the fuzz target's entry point).
  static std::unique_ptr<ONNXModel> parse(mlir::MLIRContext &ctx,
                                          llvm::StringRef bytes,
                                          llvm::StringRef displayPath,
                                          std::optional<mlir::Location> at);

  llvm::ArrayRef<ModelInput> getInputs() const;
  /// The names of the graph's outputs, in order.
  llvm::ArrayRef<std::string> getOutputNames() const;

  /// Builds the graph at `builder`'s insertion point on `inputs` (one per
  /// getInputs(), with static shapes that agree with the model's static
  /// dims). Initializer `I` is `state.param(prefix + "." + sanitize(I))`,
  /// or `state.buffer(...)` for the running statistics of a
  /// BatchNormalization. Errors are emitted at the node (or at `callLoc` for
  /// argument mismatches); returns failure after the first.
  mlir::FailureOr<llvm::SmallVector<mlir::Value>>
  emit(mlir::OpBuilder &builder, mlir::Location callLoc,
       mlir::ValueRange inputs, llvm::StringRef prefix,
       GraphState &state) const;
  /// `ampc run` read input `name`'s file before compiling: an integer
  /// input is known at import (nodes reading it fold on the host), an
  /// f32 one is read only where a value must be known (Clip's bounds).
  void setKnownInput(llvm::StringRef name, const InputValue &value);
  /// The model's data (ONNXImport.cpp).
  struct Impl;

private:
  explicit ONNXModel(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl;
};

/// `I` with every character other than letters, digits, '_' and '.'
/// replaced by '_' (the names of imported parameters).
std::string sanitizeName(llvm::StringRef name);

/// `ampc FILE.onnx`: a module with one inference graph named after the file
/// (its stem, sanitized), the model's inputs as graph inputs and its
/// initializers as parameters `STEM.<name>`. `inputShapes` (NAME ->
/// dims) fixes the shapes of inputs, and is required for every input with a
/// dynamic dim. `outputNames` receives the graph name and its outputs'
/// names. Errors are emitted through `ctx`; returns null after the first.
///
/// `inputValues` (`ampc run`: the --input files, read before compiling)
/// gives an input with a dynamic dim and no --input-shape the file's shape,
/// and makes the values of an integer input known at import (shape-like
/// inputs: a Reshape's shape, a Slice's starts, ...), folded as constants.
mlir::OwningOpRef<mlir::ModuleOp>
importONNXFile(mlir::MLIRContext &ctx, llvm::StringRef path,
               const std::map<std::string, std::vector<int64_t>> &inputShapes,
               std::string *graphName = nullptr,
               std::vector<std::string> *outputNames = nullptr,
               const std::map<std::string, InputValue> *inputValues = nullptr);

/// importONNXFile's work on a model already loaded from `path` (with the
/// values of `inputValues` already made known to it: setKnownInput).
mlir::OwningOpRef<mlir::ModuleOp>
importONNXModel(mlir::MLIRContext &ctx, const ONNXModel &model,
                llvm::StringRef path,
                const std::map<std::string, std::vector<int64_t>> &inputShapes,
                std::string *graphName = nullptr,
                std::vector<std::string> *outputNames = nullptr,
                const std::map<std::string, InputValue> *inputValues = nullptr);

/// Parses `NAME=D0xD1x...` (the `--input-shape` flag). Returns false on a
/// malformed value.
bool parseInputShape(llvm::StringRef text, std::string &name,
                     std::vector<int64_t> &dims);

} // namespace ampc::onnx_import

#endif // AMPC_FRONTEND_ONNXIMPORT_H
