//===- ONNXCheck.cpp - The ONNX checker, behind a non-throwing call -------===//
//
// libonnx's checker reports problems by throwing; the rest of ampc is built
// without exceptions (as LLVM is), so this one file is compiled with them
// and turns the exception into a message.
//
//===----------------------------------------------------------------------===//

#include "ONNXCheck.h"

#include "onnx/checker.h"
#include "onnx/defs/schema.h"

#include <exception>

bool ampc::onnx_import::checkModel(const onnx::ModelProto &model,
                                   std::string &message) {
  try {
    onnx::checker::check_model(model);
  } catch (const std::exception &e) {
    message = e.what();
    return false;
  } catch (...) {
    message = "the ONNX checker failed";
    return false;
  }
  return true;
}

int ampc::onnx_import::definitionSince(const std::string &opType, int opset) {
  try {
    const onnx::OpSchema *schema =
        onnx::OpSchemaRegistry::Schema(opType, opset, "");
    return schema ? schema->since_version() : 0;
  } catch (...) {
    return 0;
  }
}
