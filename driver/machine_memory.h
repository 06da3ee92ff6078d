// driver/machine_memory.h - this machine's RAM and the memory available to a
// new allocation now, from /proc/meminfo.
//
// MemTotal is the physical RAM; MemAvailable is the kernel's estimate of
// what can be allocated without swapping (free memory plus the page cache
// and reclaimable slabs it can drop), lower when other processes hold
// memory. Both are read in kB (KiB) and returned in bytes; a line that is
// missing or unreadable leaves its figure unset (MemAvailable exists since
// Linux 3.14).
//
//   const MachineMemory mem = readMachineMemory();
//   if (mem.available && need > *mem.available) ...
#pragma once

#include <optional>
#include <string_view>

namespace txl::driver {

struct MachineMemory {
  std::optional<double> total;      // MemTotal, bytes
  std::optional<double> available;  // MemAvailable, bytes
};

// The figures of a /proc/meminfo text ("MemTotal:  16318024 kB" lines).
MachineMemory parseMeminfo(std::string_view text);
// /proc/meminfo's figures; MemTotal from sysconf when the file cannot be read.
MachineMemory readMachineMemory();

}  // namespace txl::driver
