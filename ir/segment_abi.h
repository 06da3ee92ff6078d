// ir/segment_abi.h - the contract between a segment graph and the session that runs it.
//
// The frontend builds the graph of one segment step; passes rewrite it; the
// backend's session binds its inputs, reads its outputs and keeps its memory
// slots between segments. This header is the one place that names them:
//
//   inputs   kTokens   "tokens"   i64[qlen, batch]          the segment's token ids
//            kTargets  "targets"  i64[qlen, batch]          the next tokens (when the graph computes nll)
//            kPadMask  "pad_mask" f32[batch,1,1,mlen+qlen] 1 for a padding key of that stream (a padded graph)
//   outputs  kHidden   "hidden"   f32[qlen, batch, d_model] the last layer's output
//            kLogprob  "logprob"  f32[qlen, batch, n_token] log-probabilities (when asked for)
//            kNll      "nll"      f32[qlen, batch]          -logprob of "targets" (when asked for)
//   memory   slot s, bound as memoryName(s) = "mem.<s>": f32 or bf16 [rows, row shape...]
//            mem_read: rows = mlen; mem_write: rows = min(mem_len, mlen + qlen);
//            mem_window: the window of mlen + qlen rows the session owns.
//
// Which slots a graph has and what one remembered position holds
// (MemorySlot) depend on the model and the memory form: in the hidden form
// slot 0 is the embedding, slot l the output of layer l-1 and slot n_layer
// the final hidden state, [batch, d_model] each; in the kv form slot l holds
// layer l's projected keys and values, [batch, 2·H·D]. verifySegment()
// checks a graph against a SegmentSignature (the Segment, ir/segment.h, and
// the model's sizes): the frontend after building, the pass manager after
// every pass (PassContext::segment), the session before compiling a plan.
//
//   SegmentSignature s{.segment = {.batch = 2, .qlen = 8, .mlen = 16, .memLen = 16}, .dModel = 64, .nToken = 100};
//   if (auto problem = verifySegment(g, s)) ...
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "ir/segment.h"

namespace txl::ir {

inline constexpr const char* kTokens = "tokens";
inline constexpr const char* kTargets = "targets";
inline constexpr const char* kPadMask = "pad_mask";
inline constexpr const char* kHidden = "hidden";
inline constexpr const char* kLogprob = "logprob";
inline constexpr const char* kNll = "nll";

// The name a memory slot's tensor is bound under: "mem.<slot>".
std::string memoryName(std::int64_t slot);

// What a memory slot remembers per position: each layer's input (the
// reference's form) or each layer's projected keys and values.
enum class MemoryForm { Hidden, Kv };
const char* memoryFormName(MemoryForm form);  // "hidden", "kv"

// One memory slot of a segment graph.
struct MemorySlot {
  std::int64_t slot = 0;
  Shape rowShape;            // the shape of one remembered position
  bool windowed = false;     // updated in place by a mem_window (else mem_read + mem_write)
  DType dtype = DType::F32;  // of the remembered values (bf16: --precision bf16's keys and values)
  friend bool operator==(const MemorySlot&, const MemorySlot&) = default;
};

// The slots graph `g` reads and writes, in increasing order. Throws
// txl::InternalError if a slot is used with two row shapes, or both windowed
// and otherwise.
std::vector<MemorySlot> memorySlots(const Graph& g);

// What one segment graph must take and give.
struct SegmentSignature {
  Segment segment;  // the sizes, and the inputs and outputs it has (nll: "targets", "nll"; padded: "pad_mask")
  std::int64_t dModel = 0;
  std::int64_t nToken = 0;
  // The slots, when the model declares them (checked as a set at mlen > 0;
  // a graph at mlen 0 reads none and may leave out what it would only read).
  std::optional<std::vector<MemorySlot>> memory;
};

// The first way `g` departs from `s`, or nullopt: an input, output or slot
// missing, extra, or of another type.
std::optional<std::string> verifySegment(const Graph& g, const SegmentSignature& s);
// Throws txl::Error with the problem, prefixed by `context`.
void verifySegmentOrThrow(const Graph& g, const SegmentSignature& s, const std::string& context);

}  // namespace txl::ir
