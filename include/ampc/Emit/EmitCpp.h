//===- EmitCpp.h - print a lowered step as C++ --------------------*- C++ -*-===//
#ifndef AMPC_EMIT_EMITCPP_H
#define AMPC_EMIT_EMITCPP_H

#include "ampc/Conversion/TGToRuntime.h"

#include <string>

namespace ampc::emit {

/// Prints `program` as a header (`NAME.h`) and a self-contained source that
/// calls the runtime C ABI: NAME_create / NAME_step / NAME_output /
/// NAME_save / NAME_load / NAME_destroy. `cuda` picks the backend the
/// generated create() asks for.
void emitCpp(const rt::Program &program, bool cuda, const std::string &header,
             std::string &headerText, std::string &sourceText);

} // namespace ampc::emit

#endif // AMPC_EMIT_EMITCPP_H
