//===- HKTDialect.cpp - The hkt dialect -----------------------------------===//

#include "dialect/HKTDialect.h"
#include "dialect/HKTOps.h"

using namespace mlir;
using namespace mlir::hkt;

#include "dialect/HKTOpsDialect.cpp.inc"

void HKTDialect::initialize() {
  addOperations<
#define GET_OP_LIST
#include "dialect/HKTOps.cpp.inc"
      >();
}
