// ir/segment.h - one segment step: what its graph is built for.
//
// A Segment is everything that decides the graph of one segment: the
// frontend builds it (frontend::buildSegmentGraph), a session caches one plan
// per Segment (backend::Session), an artifact stores one graph per Segment
// (driver::StoredGraph), and the segment ABI checks a graph against it
// (ir::SegmentSignature).
//
//   Segment s{.batch = 2, .qlen = 8, .mlen = 16, .memLen = 16};
//   s.klen();  // 24 keys: 16 remembered positions, then the segment's 8
//   s.kept();  // 16 positions remembered after it
#pragma once

#include <algorithm>
#include <compare>
#include <cstdint>

namespace txl::ir {

struct Segment {
  std::int64_t batch = 1;      // streams run side by side
  std::int64_t qlen = 1;       // tokens of the segment
  std::int64_t mlen = 0;       // positions in memory when the segment starts
  std::int64_t memLen = 0;     // mem_len in force: at most this many positions kept after the segment
  std::int64_t clampLen = -1;  // clamp_len in force (-1: no clamp)
  bool sameLength = false;     // same_length: every query attends to as many keys
  bool logprob = true;         // outputs the full log-probabilities "logprob"
  bool nll = true;             // takes "targets" and outputs their NLL "nll"
  // The first of the mlen remembered positions may be padding: a run-time
  // input "pad_mask" f32[batch, 1, 1, klen] (1: a padding key of that
  // stream, so that each stream may remember fewer positions) masks them
  // after the attention mask. A session runs every warm-up segment (fewer
  // than mem_len positions remembered) on the padded graph of mlen = mem_len,
  // one plan per qlen instead of one per (qlen, mlen) (docs/MEMORY.md).
  bool padded = false;

  // Keys the segment attends to: the memory, then the segment itself.
  std::int64_t klen() const { return mlen + qlen; }
  // Positions remembered after the segment: the last min(mem_len, mlen + qlen).
  std::int64_t kept() const { return std::min(memLen, mlen + qlen); }

  friend auto operator<=>(const Segment&, const Segment&) = default;
  friend bool operator==(const Segment&, const Segment&) = default;
};

}  // namespace txl::ir
