//===- ONNXCheck.h - The ONNX checker, behind a non-throwing call -*- C++ -*-===//

#ifndef AMPC_LIB_FRONTEND_ONNX_ONNXCHECK_H
#define AMPC_LIB_FRONTEND_ONNX_ONNXCHECK_H

#include "onnx/onnx_pb.h"

#include <string>

namespace ampc::onnx_import {
/// Runs onnx::checker::check_model; false (with the checker's message) when
/// it rejects `model`.
bool checkModel(const onnx::ModelProto &model, std::string &message);

/// The version of the default domain's `opType` in effect at `opset` (the
/// opset in which that definition first appeared), or -1 when ONNX has no
/// such op at that opset.
int sinceVersion(const std::string &opType, int opset);

/// Whether `opType` at `opset` (below 13) is the op opset 13 defines: the
/// same definition, or one whose inputs, outputs and attributes (names,
/// optionality, types, defaults) are the same, so that only the element
/// types allowed differ (opset 13 added bfloat16 to most ops). Softmax,
/// LogSoftmax and Hardmax changed their axis's meaning at 13 with the same
/// signature, and are never the same.
bool sameAsOpset13(const std::string &opType, int opset);
} // namespace ampc::onnx_import

#endif // AMPC_LIB_FRONTEND_ONNX_ONNXCHECK_H
