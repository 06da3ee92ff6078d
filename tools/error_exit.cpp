// tools/error_exit.cpp - an exception's exit code and line, as main() and a split score run report them.
#include "tools/error_exit.h"

#include <exception>
#include <new>

#include "ir/check.h"
#include "tools/exit_codes.h"

namespace txl::tools {

std::pair<int, std::string> describeCurrentException() {
  try {
    throw;
  } catch (const UsageError& e) {
    return {kExitUsage, std::string("error: ") + oneLine(e.what())};
  } catch (const Error& e) {
    return {kExitBadInput, std::string("error: ") + oneLine(e.what())};
  } catch (const InternalError& e) {
    return {kExitInternal, oneLine(e.what())};
  } catch (const std::bad_alloc&) {
    return {kExitBadInput, "error: out of memory"};
  } catch (const std::exception& e) {
    return {kExitInternal, std::string("internal error: ") + oneLine(e.what())};
  }
}

}  // namespace txl::tools
