// python/txlc_executable.h - which txlc executable compile(emit="exe") copies when not told.
//
// In order: $TXLC_EXECUTABLE; the build's txlc when the module is the one in
// the build tree; the txlc installed with the module (`cmake --install`
// or `pip install .` put it at TXLC_FROM_MODULE from the module's folder,
// ../../../bin/txlc for lib/python3.X/site-packages); the build's txlc if it
// is still there; `txlc` on PATH. The result may not exist: the caller names
// it then.
//
//   std::string exe = defaultTxlcExecutable();  // "/opt/txlc/bin/txlc"
#pragma once

#include <string>

namespace txl::python {

std::string defaultTxlcExecutable();

}  // namespace txl::python
