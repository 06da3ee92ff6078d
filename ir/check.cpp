// ir/check.cpp - the failure path of TXL_CHECK.
#include "ir/check.h"

namespace txl {

void failCheck(const char* file, int line, const char* cond, const std::string& message) {
  throw InternalError(std::string("internal error at ") + file + ":" + std::to_string(line) + ": " +
                      cond + (message.empty() ? "" : " (" + message + ")"));
}

}  // namespace txl
