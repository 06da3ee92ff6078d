// ir/host_memory.h - host buffers for tensors, plans and packed weights,
// large ones on transparent huge pages.
//
// Why: attention reads each remembered key and value row (a 4 KiB row per
// position at enwik8's width) once per head, and the position tables and
// packed weights are streamed every segment: on 4 KiB pages that is a TLB
// miss per row. TXL_HUGE_PAGES=0 (below) is the A/B switch: `txlc bench
// bench/enwik8_base.json --random-weights --prefill --threads 2` with and
// without it (figures in docs/LOG.md).
//
// A buffer of at least kHugePageBytes is mapped anonymously at a 2 MiB
// boundary and advised MADV_HUGEPAGE (honoured when the system's THP mode is
// `always` or `madvise`); its tail past the last whole huge page stays on
// small pages, so nothing beyond 4 KiB rounding is resident in excess.
// Smaller buffers come from aligned_alloc. Every buffer is 64-byte aligned.
// TXL_HUGE_PAGES=0 in the environment puts every buffer on small pages.
//
//   std::shared_ptr<void> b = allocateZeroed(bytes);     // freed with the last owner
//   std::shared_ptr<void> p = allocateUntouched(bytes);  // the caller writes what it uses
#pragma once

#include <cstddef>
#include <memory>

namespace txl::ir {

inline constexpr std::size_t kHugePageBytes = std::size_t{2} << 20;

// `bytes` (0 allowed) of zeros, every page faulted in now: a first touch
// later (a state row the memory window reaches segments from now) could
// stall on the kernel assembling a huge page inside a timed forward().
// Throws std::bad_alloc.
std::shared_ptr<void> allocateZeroed(std::size_t bytes);

// `bytes` of unspecified contents whose pages become resident only as the
// caller writes them (a packed weight, written whole by its reorder, except
// for padding that is never read). Throws std::bad_alloc.
std::shared_ptr<void> allocateUntouched(std::size_t bytes);

}  // namespace txl::ir
