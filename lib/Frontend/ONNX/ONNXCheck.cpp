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

int ampc::onnx_import::sinceVersion(const std::string &opType, int opset) {
  const onnx::OpSchema *schema =
      onnx::OpSchemaRegistry::Schema(opType, opset, "");
  return schema ? schema->SinceVersion() : -1;
}

bool ampc::onnx_import::sameAsOpset13(const std::string &opType, int opset) {
  const onnx::OpSchema *old = onnx::OpSchemaRegistry::Schema(opType, opset, "");
  const onnx::OpSchema *now = onnx::OpSchemaRegistry::Schema(opType, 13, "");
  if (!old || !now)
    return false;
  if (old->SinceVersion() == now->SinceVersion())
    return true;
  if (opType == "Softmax" || opType == "LogSoftmax" || opType == "Hardmax")
    return false;
  if (old->min_input() != now->min_input() ||
      old->max_input() != now->max_input() ||
      old->min_output() != now->min_output() ||
      old->max_output() != now->max_output())
    return false;
  auto sameParams = [](const std::vector<onnx::OpSchema::FormalParameter> &a,
                       const std::vector<onnx::OpSchema::FormalParameter> &b) {
    if (a.size() != b.size())
      return false;
    for (size_t k = 0; k < a.size(); ++k)
      if (a[k].GetName() != b[k].GetName() ||
          a[k].GetOption() != b[k].GetOption())
        return false;
    return true;
  };
  if (!sameParams(old->inputs(), now->inputs()) ||
      !sameParams(old->outputs(), now->outputs()))
    return false;
  const auto &oa = old->attributes();
  const auto &na = now->attributes();
  if (oa.size() != na.size())
    return false;
  for (const auto &[name, attr] : oa) {
    auto it = na.find(name);
    if (it == na.end() || it->second.type != attr.type ||
        it->second.required != attr.required ||
        it->second.default_value.SerializeAsString() !=
            attr.default_value.SerializeAsString())
      return false;
  }
  return true;
}
