//===- ONNXCheck.h - The ONNX checker, behind a non-throwing call -*- C++ -*-===//

#ifndef AMPC_LIB_FRONTEND_ONNX_ONNXCHECK_H
#define AMPC_LIB_FRONTEND_ONNX_ONNXCHECK_H

#include "onnx/onnx_pb.h"

#include <string>

namespace ampc::onnx_import {
/// Runs onnx::checker::check_model; false (with the checker's message) when
/// it rejects `model`.
bool checkModel(const onnx::ModelProto &model, std::string &message);
/// The opset of the default domain whose definition of `opType` is the one
/// in effect at `opset` (its schema's since_version); 0 for an op type the
/// registry does not know.
int definitionSince(const std::string &opType, int opset);
} // namespace ampc::onnx_import

#endif // AMPC_LIB_FRONTEND_ONNX_ONNXCHECK_H
