//===- EmitCpp.h - print a lowered step as C++ --------------------*- C++ -*-===//
#ifndef AMPC_EMIT_EMITCPP_H
#define AMPC_EMIT_EMITCPP_H

#include "ampc/Dialect/RT/ProgramInfo.h"

#include <string>

namespace ampc::emit {

/// Prints the rt.program `program` describes as a header (`NAME.h`) and a
/// self-contained source that calls the runtime C ABI: NAME_create /
/// NAME_step / NAME_output / NAME_save / NAME_load / NAME_destroy. The
/// source is an EmitC module printed by `mlir::emitc::translateToCpp`.
/// `cuda` picks the backend the generated create() asks for. Fails (with an
/// error at the op) on IR it cannot print.
mlir::LogicalResult emitCpp(const rt::Program &program, bool cuda,
                            const std::string &header, std::string &headerText,
                            std::string &sourceText);

} // namespace ampc::emit

#endif // AMPC_EMIT_EMITCPP_H
