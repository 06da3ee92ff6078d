// backend/packed_weights.cpp - PackedWeights.
#include "backend/packed_weights.h"

#include <algorithm>
#include <cstdlib>
#include <functional>
#include <new>

namespace txl::backend::onednn {

std::shared_ptr<const PackedWeight> PackedWeights::get(const void* plain, const dnnl::memory::desc& plainMd,
                                                       const dnnl::memory::desc& packedMd, const dnnl::engine& engine,
                                                       bool* made) {
  std::lock_guard lock(mutex_);
  std::erase_if(entries_, [](const Entry& e) { return e.packed.expired(); });
  for (const Entry& e : entries_)
    if (e.plain == plain && e.plainMd == plainMd && e.packedMd == packedMd)
      if (auto p = e.packed.lock()) {
        if (made) *made = false;
        return p;
      }
  const std::size_t size = (std::max<std::size_t>(packedMd.get_size(), 1) + 63) / 64 * 64;
  void* bytes = std::aligned_alloc(64, size);
  if (!bytes) throw std::bad_alloc();
  auto packed = std::make_shared<PackedWeight>();
  packed->buffer = std::shared_ptr<void>(bytes, [](void* q) { std::free(q); });
  packed->mem = dnnl::memory(packedMd, engine, bytes);
  dnnl::memory from(plainMd, engine, const_cast<void*>(plain));
  dnnl::stream stream(engine);
  dnnl::reorder(from, packed->mem).execute(stream, from, packed->mem);
  stream.wait();
  entries_.push_back({plain, plainMd, packedMd, packed, packedMd.get_size()});
  if (made) *made = true;
  return packed;
}

void PackedWeights::notePlainRead(const void* data, std::size_t bytes) {
  const Range r{data, static_cast<const char*>(data) + bytes};
  std::lock_guard lock(mutex_);
  for (const Range& seen : plainReads_)
    if (seen.begin == r.begin && seen.end == r.end) return;
  plainReads_.push_back(r);
}

void PackedWeights::notePacked(const ir::Tensor& w, std::size_t offset, std::size_t bytes) {
  if (!dropPlainPages_ || !w.fileBacked()) return;  // nothing to drop: its memory is the only copy of it
  std::lock_guard lock(mutex_);
  const char* begin = static_cast<const char*>(w.raw()) + offset;
  // Drop now, so that compiling a plan never holds every weight twice; a
  // reader that comes later faults them back in.
  if (!readPlain(begin, begin + bytes)) w.dropResidentPages(offset, bytes);
  for (const PackedRange& r : packed_)
    if (r.weight.raw() == w.raw() && r.offset == offset && r.bytes == bytes) return;
  packed_.push_back({w, offset, bytes});
}

bool PackedWeights::readPlain(const void* begin, const void* end) const {
  return std::any_of(plainReads_.begin(), plainReads_.end(),
                     [&](const Range& r) { return std::less<>()(r.begin, end) && std::less<>()(begin, r.end); });
}

std::size_t PackedWeights::releasePlainPages() {
  std::lock_guard lock(mutex_);
  std::size_t dropped = 0;
  // Every time: a plan compiled since may have packed a weight again (its
  // earlier pack died with its plans) and so faulted its pages back in.
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
  return total;
}

}  // namespace txl::backend::onednn
