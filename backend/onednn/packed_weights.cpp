// backend/onednn/packed_weights.cpp - PackedWeights.
#include "backend/onednn/packed_weights.h"

#include <algorithm>
#include <cstring>
#include <functional>

#include "ir/host_memory.h"

namespace txl::backend::onednn {

void readPackedRow(const PackedWeight& packed, std::int64_t n, float* out) {
  // Element (k, n) of a 2-D blocked descriptor: the outer block indices times
  // the outer strides, plus the position inside the inner blocks (listed
  // outermost first, e.g. BA16a64b: 16 of dim 0, then 64 of dim 1).
  const dnnl_memory_desc_t& md = packed.mem.get_desc().data;
  const auto& b = md.format_desc.blocking;
  std::int64_t block[2] = {1, 1};
  for (int i = 0; i < b.inner_nblks; ++i) block[b.inner_idxs[i]] *= b.inner_blks[i];
  const auto* base = static_cast<const float*>(packed.mem.get_data_handle()) + md.offset0;
  const std::int64_t rows = md.dims[0];
  for (std::int64_t k = 0; k < rows; ++k) {
    const std::int64_t idx[2] = {k, n};
    std::int64_t offset = (k / block[0]) * b.strides[0] + (n / block[1]) * b.strides[1];
    std::int64_t below[2] = {block[0], block[1]}, inner = 0;
    for (int i = 0; i < b.inner_nblks; ++i) {
      const int d = b.inner_idxs[i];
      below[d] /= b.inner_blks[i];
      inner = inner * b.inner_blks[i] + (idx[d] % block[d]) / below[d] % b.inner_blks[i];
    }
    out[k] = base[offset + inner];
  }
}

void lookupRows(const float* table, std::int64_t rows, std::int64_t dim, const std::int64_t* ids, std::int64_t n,
                std::int64_t lo, const std::vector<PackedRows>& packed, float* out) {
  const std::size_t rowBytes = std::size_t(dim) * sizeof(float);
  for (std::int64_t i = 0; i < n; ++i) {
    float* y = out + i * dim;
    const std::int64_t r = ids[i] - lo;
    if (ids[i] < lo || r >= rows) {
      std::fill(y, y + dim, 0.0f);
      continue;
    }
    const char* row = reinterpret_cast<const char*>(table + r * dim);
    auto it = std::find_if(packed.begin(), packed.end(), [&](const PackedRows& p) {
      return p.rowBytes == rowBytes && p.begin <= row && row < p.end;
    });
    if (it == packed.end()) std::memcpy(y, row, rowBytes);
    else readPackedRow(*it->packed, (row - it->begin) / std::ptrdiff_t(rowBytes), y);
  }
}

void unmapRowsRead(const ir::Tensor& weight, const float* table, std::int64_t rows, std::int64_t dim,
                   const std::int64_t* ids, std::int64_t n, std::int64_t lo) {
  constexpr std::uintptr_t kWindow = 2 << 20;  // the largest folio a fault maps (a PMD); fault-around maps 64 KB
  const std::size_t rowBytes = std::size_t(dim) * sizeof(float);
  const auto base = reinterpret_cast<std::uintptr_t>(weight.raw());
  std::vector<std::uintptr_t> windows;  // kWindow-aligned addresses the rows' faults mapped around
  windows.reserve(std::size_t(n));
  for (std::int64_t i = 0; i < n; ++i) {
    const std::int64_t r = ids[i] - lo;
    if (ids[i] < lo || r >= rows) continue;
    const auto row = reinterpret_cast<std::uintptr_t>(table) + std::uintptr_t(r) * rowBytes;
    for (std::uintptr_t w = row / kWindow * kWindow; w < row + rowBytes; w += kWindow) windows.push_back(w);
  }
  std::sort(windows.begin(), windows.end());
  windows.erase(std::unique(windows.begin(), windows.end()), windows.end());
  for (std::uintptr_t w : windows) {
    const std::uintptr_t first = std::max(w, base);  // clipped to the weight: its neighbours are others' business
    if (first < w + kWindow) weight.dropResidentPages(first - base, w + kWindow - first);
  }
}

std::shared_ptr<const PackedWeight> PackedWeights::get(const void* plain, const dnnl::memory::desc& plainMd,
                                                       const dnnl::memory::desc& packedMd, const dnnl::engine& engine,
                                                       bool* made, const Source* source) {
  std::lock_guard lock(mutex_);
  std::erase_if(entries_, [](const Entry& e) { return e.packed.expired(); });
  for (const Entry& e : entries_)
    if (e.plain == plain && e.plainMd == plainMd && e.packedMd == packedMd)
      if (auto p = e.packed.lock()) {
        if (made) *made = false;
        return p;
      }
  auto packed = std::make_shared<PackedWeight>();
  packed->buffer = ir::allocateUntouched(packedMd.get_size());
  packed->mem = dnnl::memory(packedMd, engine, packed->buffer.get());
  reorderInChunks(plain, plainMd, packed->mem, engine, source);
  entries_.push_back({plain, plainMd, packedMd, packed, packedMd.get_size()});
  if (made) *made = true;
  return packed;
}

std::shared_ptr<const kernels::Int8Rows> PackedWeights::getInt8(const float* plain, std::int64_t n, std::int64_t k,
                                                                int threads, const Source* source) {
  std::lock_guard lock(mutex_);
  return int8Rows(plain, n, k, threads, source);
}

std::shared_ptr<const kernels::Int8Vnni> PackedWeights::getInt8Vnni(const float* plain, std::int64_t n, std::int64_t k,
                                                                    int threads, const Source* source) {
  std::lock_guard lock(mutex_);
  std::erase_if(int8VnniEntries_, [](const Int8VnniEntry& e) { return e.packed.expired(); });
  for (const Int8VnniEntry& e : int8VnniEntries_)
    if (e.plain == plain && e.n == n && e.k == k)
      if (auto p = e.packed.lock()) return p;
  std::shared_ptr<const kernels::Int8Vnni> packed =
      kernels::packInt8Vnni(*int8Rows(plain, n, k, threads, source), threads);
  int8VnniEntries_.push_back({plain, n, k, packed});
  return packed;
}

std::shared_ptr<const kernels::Int8Rows> PackedWeights::int8Rows(const float* plain, std::int64_t n, std::int64_t k,
                                                                 int threads, const Source* source) {
  std::erase_if(int8Entries_, [](const Int8Entry& e) { return e.rows.expired(); });
  for (const Int8Entry& e : int8Entries_)
    if (e.plain == plain && e.n == n && e.k == k)
      if (auto p = e.rows.lock()) return p;
  auto rows = std::make_shared<kernels::Int8Rows>(kernels::allocateInt8Rows(n, k));
  const bool drop = source && source->tensor && dropPlainPages_ && source->tensor->fileBacked();
  const std::size_t rowBytes = std::size_t(k) * sizeof(float);
  constexpr std::size_t kChunkBytes = std::size_t(16) << 20;
  const std::int64_t step = std::max<std::int64_t>(1, std::int64_t(kChunkBytes / std::max<std::size_t>(rowBytes, 1)));
  for (std::int64_t r = 0; r < n; r += step) {
    const std::int64_t count = std::min(step, n - r);
    kernels::quantizeInt8Rows(plain, r, count, *rows, threads);
    if (!drop) continue;
    const std::size_t first = source->offset + std::size_t(r) * rowBytes, bytes = std::size_t(count) * rowBytes;
    const char* begin = static_cast<const char*>(source->tensor->raw()) + first;
    if (!readPlain(begin, begin + bytes)) source->tensor->dropResidentPages(first, bytes);
  }
  int8Entries_.push_back({plain, n, k, rows});
  return rows;
}

// A large linear weight (plain `ba` [K, N]: column n is row n of the
// user's [N, K] weight, contiguous) is packed a slice of columns at a time,
// at the packed layout's block boundaries, and when it comes from a file
// each slice's plain pages are dropped as soon as it is packed: packing never
// holds the whole weight twice. Anything else: one reorder.
void PackedWeights::reorderInChunks(const void* plain, const dnnl::memory::desc& plainMd, dnnl::memory to,
                                    const dnnl::engine& engine, const Source* source) {
  dnnl::stream stream(engine);
  const auto& dims = plainMd.data.dims;
  const bool plainBa = plainMd.data.ndims == 2 && plainMd.data.format_kind == dnnl_blocked &&
                       plainMd.data.format_desc.blocking.inner_nblks == 0 &&
                       plainMd.data.format_desc.blocking.strides[0] == 1 &&
                       plainMd.data.format_desc.blocking.strides[1] == dims[0];
  const bool drop = source && source->tensor && dropPlainPages_ && source->tensor->fileBacked();
  const std::size_t columnBytes = plainBa && dims[1] > 0 ? plainMd.get_size() / std::size_t(dims[1]) : 0;
  constexpr std::size_t kChunkBytes = std::size_t(16) << 20;
  if (!plainBa || !drop || plainMd.get_size() <= kChunkBytes) {
    dnnl::memory from(plainMd, engine, const_cast<void*>(plain));
    dnnl::reorder(from, to).execute(stream, from, to);
    stream.wait();
    return;
  }
  const auto& blocking = to.get_desc().data.format_desc.blocking;
  std::int64_t block = 1;  // the packed layout's block along N
  for (int i = 0; i < blocking.inner_nblks; ++i)
    if (blocking.inner_idxs[i] == 1) block *= blocking.inner_blks[i];
  const std::int64_t n = dims[1];
  const std::int64_t step = std::max<std::int64_t>(block, std::int64_t(kChunkBytes / columnBytes) / block * block);
  for (std::int64_t n0 = 0; n0 < n; n0 += step) {
    const std::int64_t count = std::min(step, n - n0);
    const dnnl::memory::desc fromMd = plainMd.submemory_desc({dims[0], count}, {0, n0});
    const dnnl::memory::desc toMd = to.get_desc().submemory_desc({dims[0], count}, {0, n0});
    dnnl::memory from(fromMd, engine, const_cast<void*>(plain));
    dnnl::memory into(toMd, engine, to.get_data_handle());
    dnnl::reorder(from, into).execute(stream, from, into);
    stream.wait();
    const std::size_t first = source->offset + std::size_t(n0) * columnBytes, bytes = std::size_t(count) * columnBytes;
    const char* begin = static_cast<const char*>(source->tensor->raw()) + first;
    if (!readPlain(begin, begin + bytes)) source->tensor->dropResidentPages(first, bytes);
  }
}

void PackedWeights::notePlainRead(const ir::Tensor* weight, const void* data, std::size_t bytes,
                                  std::weak_ptr<const void> reader) {
  std::lock_guard lock(mutex_);
  plainReads_.push_back({data, static_cast<const char*>(data) + bytes, std::move(reader)});
  if (weight && dropPlainPages_ && weight->fileBacked())
    noteCandidate(*weight, std::size_t(static_cast<const char*>(data) - static_cast<const char*>(weight->raw())),
                  bytes);
}

void PackedWeights::noteCandidate(const ir::Tensor& w, std::size_t offset, std::size_t bytes) {
  for (const PackedRange& r : packed_)
    if (r.weight.raw() == w.raw() && r.offset == offset && r.bytes == bytes) return;
  packed_.push_back({w, offset, bytes});
}

void PackedWeights::notePacked(const ir::Tensor& w, std::size_t offset, std::size_t bytes) {
  if (!dropPlainPages_ || !w.fileBacked()) return;  // nothing to drop: its memory is the only copy of it
  std::lock_guard lock(mutex_);
  const char* begin = static_cast<const char*>(w.raw()) + offset;
  // Drop now, so that compiling a plan never holds every weight twice; a
  // reader that comes later faults them back in.
  if (!readPlain(begin, begin + bytes)) w.dropResidentPages(offset, bytes);
  noteCandidate(w, offset, bytes);
}

bool PackedWeights::readPlain(const void* begin, const void* end) const {
  return std::any_of(plainReads_.begin(), plainReads_.end(), [&](const Range& r) {
    return !r.reader.expired() && std::less<>()(r.begin, end) && std::less<>()(begin, r.end);
  });
}

std::size_t PackedWeights::releasePlainPages() {
  std::lock_guard lock(mutex_);
  std::erase_if(plainReads_, [](const Range& r) { return r.reader.expired(); });
  std::size_t dropped = 0;
  // Every time: a plan compiled since may have packed or read a weight again
  // (its earlier pack died with its plans) and so faulted its pages back in.
  for (const PackedRange& r : packed_) {
    const char* begin = static_cast<const char*>(r.weight.raw()) + r.offset;
    if (!readPlain(begin, begin + r.bytes)) dropped += r.weight.dropResidentPages(r.offset, r.bytes);
  }
  return dropped;
}

std::size_t PackedWeights::bytes() const {
  std::lock_guard lock(mutex_);
  std::size_t total = 0;
  for (const Entry& e : entries_)
    if (!e.packed.expired()) total += e.bytes;
  for (const Int8Entry& e : int8Entries_)
    if (auto p = e.rows.lock()) total += p->size();
  for (const Int8VnniEntry& e : int8VnniEntries_)
    if (auto p = e.packed.lock()) total += p->size();
  return total;
}

}  // namespace txl::backend::onednn
