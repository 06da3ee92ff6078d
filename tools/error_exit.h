// tools/error_exit.h - the exit code and the message line of an error that ends a command.
#pragma once

#include <string>
#include <utility>

namespace txl::tools {

// For the exception in flight (call inside a catch): its exit code
// (tools/exit_codes.h) and its line without the "txlc: " prefix ("error:
// ..." for the user's mistakes, "internal error ..." for txlc's).
std::pair<int, std::string> describeCurrentException();

}  // namespace txl::tools
