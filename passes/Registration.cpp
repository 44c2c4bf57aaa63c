//===- Registration.cpp - pass registration glue --------------------------===//
//
// Instantiates the tablegen'd pass registration. Each pass lives in its own
// file next to this one.
//
//===----------------------------------------------------------------------===//

#include "ampc/Transforms/Passes.h"
