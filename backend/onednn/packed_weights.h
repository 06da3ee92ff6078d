// backend/onednn/packed_weights.h - constant weights in the layouts primitives ask
// for, made once per model, and the plain copies they make unnecessary.
//
// A matmul runs fastest on weights reordered ("packed") into a blocked
// layout it chooses; the layout depends on the weight's shape only, not on
// the segment length (oneDNN picks the same blocked format for every M). One
// PackedWeights lives in each oneDNN executor, i.e. once per model, and every
// plan the executor compiles asks it for its packed weights: the plans of all
// segment shapes (scoring, warm-up, one-token generation) share one copy. An
// entry lives as long as some plan holds it.
//
// The plain weight a pack was made from is then dead weight in memory, unless
// a live plan still reads it in place (a bias, a layer norm). Weights that
// only constant folding read (W_q rows, W_r, the head cluster's rows) are
// dead once folded. When the plain weight is a view of a mapped file
// (ir::Tensor::fileView), such pages can be dropped: every plan records the
// bytes it reads plain while it lives, and releasePlainPages() drops the
// pages of file-backed bytes some plan packed or read that no live plan reads
// (notePacked drops at once, and a large weight is dropped slice by slice as
// it is packed, so a compile never holds a weight twice). An embedding
// lookup does not count as a read: it reads tied rows from the pack
// (lookupRows) and faults back only the other rows it needs. A later reader
// gets dropped pages back from the file (correct, only slower once).
//
//   PackedWeights packs;
//   auto p = packs.get(w.raw(), plainMd, pd.weights_desc(), engine);  // reorders once
//   args[DNNL_ARG_WEIGHTS] = p->mem;
//   packs.notePlainRead(&bias, bias.raw(), bias.bytes(), plan.alive);
//   packs.notePacked(w, 0, w.bytes());
//   packs.releasePlainPages();
#pragma once

#include <cstddef>
#include <memory>
#include <mutex>
#include <vector>

#include <oneapi/dnnl/dnnl.hpp>

#include "backend/kernels/int8_linear.h"
#include "backend/kernels/int8_vnni.h"
#include "ir/tensor.h"

namespace txl::backend::onednn {

struct PackedWeight {
  std::shared_ptr<void> buffer;  // the packed bytes
  dnnl::memory mem;              // over `buffer`, in the packed layout
};

// Row `n` of a linear weight [N, K] that was packed as the matmul operand
// B = Wᵀ [K, N] (any blocked layout): the K values of column n of B, into `out`.
void readPackedRow(const PackedWeight& packed, std::int64_t n, float* out);

// Rows of a weight that some plan step reads packed: an embedding lookup of
// a tied table reads them from the pack, so the plain pages stay dropped.
struct PackedRows {
  const char* begin = nullptr;  // the plain bytes the pack was made from
  const char* end = nullptr;
  std::size_t rowBytes = 0;
  std::shared_ptr<const PackedWeight> packed;
};

// An embedding lookup (kernels::embedding: out row i = table row ids[i] - lo,
// zeros outside [lo, lo + rows)) that reads the rows some PackedRows covers
// from the pack instead of the table, so their plain pages stay dropped.
void lookupRows(const float* table, std::int64_t rows, std::int64_t dim, const std::int64_t* ids, std::int64_t n,
                std::int64_t lo, const std::vector<PackedRows>& packed, float* out);

// After an embedding lookup copied the rows of `ids` (as lookupRows reads
// them: row ids[i] - lo of `rows`) out of `table`, a view into the file-backed
// user weight `weight`: drops the pages the lookup mapped. Each page fault on
// a file mapping also maps the neighbouring pages the page cache holds (the
// kernel's fault-around, 64 KB by default, which MADV_RANDOM does not turn
// off; and on kernels whose page cache holds large folios, the whole folio,
// up to 2 MiB), so without this a few thousand random tokens would map a
// vocabulary-sized table whole, though its matmul reads a pack (bf16, int8)
// and the lookup needs a row per token. The 2 MiB-aligned windows around
// the rows are dropped (clipped to the weight); the embedding calls this
// after each row, so one row's folio at most is mapped at a time. The rows
// stay in the page cache; the next lookup of one faults it back cheaply.
void unmapRowsRead(const ir::Tensor& weight, const float* table, std::int64_t rows, std::int64_t dim,
                   const std::int64_t* ids, std::int64_t n, std::int64_t lo);

class PackedWeights {
 public:
  // `dropPlainPages` false: pack and share, but never drop a page.
  explicit PackedWeights(bool dropPlainPages = true) : dropPlainPages_(dropPlainPages) {}

  // Where packed bytes come from: `offset` bytes into a user's weight.
  struct Source {
    const ir::Tensor* tensor = nullptr;
    std::size_t offset = 0;
  };
  // The bytes at `plain` (laid out as `plainMd`) in layout `packedMd`: the
  // copy some live plan already holds, or a new one made now by a reorder.
  // `made` (optional) says which. With a file-backed `source`, a large
  // weight's plain pages are dropped slice by slice as they are packed.
  std::shared_ptr<const PackedWeight> get(const void* plain, const dnnl::memory::desc& plainMd,
                                          const dnnl::memory::desc& packedMd, const dnnl::engine& engine,
                                          bool* made = nullptr, const Source* source = nullptr);

  // The f32 linear weight [n, k] at `plain` as int8 rows (backend/kernels/int8_linear.h):
  // the copy some live plan already holds, or one quantized now on at most
  // `threads` threads. With a file-backed `source`, the plain pages are
  // dropped slice by slice as they are quantized, as get() does.
  std::shared_ptr<const kernels::Int8Rows> getInt8(const float* plain, std::int64_t n, std::int64_t k, int threads,
                                                   const Source* source = nullptr);
  // The same weight's int8 values in the VNNI layout (backend/kernels/int8_vnni.h):
  // the copy some live plan already holds, or one repacked now from the int8
  // rows (getInt8's, which are shared or made, and dropped again when no plan
  // holds them), so the plain weight is quantized once however many layouts
  // the plans read.
  std::shared_ptr<const kernels::Int8Vnni> getInt8Vnni(const float* plain, std::int64_t n, std::int64_t k, int threads,
                                                       const Source* source = nullptr);

  // A plan (alive while `reader` is) reads bytes [data, data + bytes) of a
  // weight in place; `weight` (optional) is the user's tensor they belong to.
  // Once no live plan reads them, a file-backed weight's bytes are dropped
  // too (the plans that fold constants read weights once, then die).
  void notePlainRead(const ir::Tensor* weight, const void* data, std::size_t bytes, std::weak_ptr<const void> reader);
  // A plan packed bytes [offset, offset + bytes) of weight `w`: drops their
  // pages now when file-backed and no plan read them in place so far.
  void notePacked(const ir::Tensor& w, std::size_t offset, std::size_t bytes);
  // Drops the resident pages of file-backed bytes some plan packed or read,
  // which no live plan reads in place; returns the bytes of the ranges it
  // dropped (resident or not).
  std::size_t releasePlainPages();

  // Bytes of the packed copies alive now.
  std::size_t bytes() const;
  // Whether file-backed weights' pages are dropped (the constructor's choice).
  bool dropsPlainPages() const { return dropPlainPages_; }

 private:
  struct Entry {
    const void* plain;
    dnnl::memory::desc plainMd, packedMd;
    std::weak_ptr<const PackedWeight> packed;
    std::size_t bytes;
  };
  struct Int8Entry {
    const void* plain;
    std::int64_t n, k;
    std::weak_ptr<const kernels::Int8Rows> rows;
  };
  struct Int8VnniEntry {
    const void* plain;
    std::int64_t n, k;
    std::weak_ptr<const kernels::Int8Vnni> packed;
  };
  struct Range {
    const void* begin;
    const void* end;
    std::weak_ptr<const void> reader;
  };
  struct PackedRange {  // bytes of a file-backed weight some plan packed or read
    ir::Tensor weight;
    std::size_t offset, bytes;
  };
  bool readPlain(const void* begin, const void* end) const;  // overlaps a live plain read (mutex held)
  void noteCandidate(const ir::Tensor& w, std::size_t offset, std::size_t bytes);  // mutex held
  std::shared_ptr<const kernels::Int8Rows> int8Rows(const float* plain, std::int64_t n, std::int64_t k, int threads,
                                                    const Source* source);  // getInt8, mutex held
  void reorderInChunks(const void* plain, const dnnl::memory::desc& plainMd, dnnl::memory to,
                       const dnnl::engine& engine, const Source* source);  // mutex held

  const bool dropPlainPages_;
  mutable std::mutex mutex_;
  std::vector<Entry> entries_;
  std::vector<Int8Entry> int8Entries_;
  std::vector<Int8VnniEntry> int8VnniEntries_;
  std::vector<Range> plainReads_;
  std::vector<PackedRange> packed_;
};

}  // namespace txl::backend::onednn
