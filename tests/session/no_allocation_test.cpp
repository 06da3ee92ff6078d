// tests/session/no_allocation_test.cpp - once a stream is warm, a segment
// allocates nothing in txlc's own code (issue 6).
//
// This executable replaces every global operator new / delete (the nothrow
// and aligned forms too: a mix with a sanitizer's own is a mismatch) with
// counting versions. Counting is on only on the test's thread, only inside the
// measured stretch, and leaves out what oneDNN allocates inside the calls
// the executor marks as library calls (backend/library_calls.h); the
// executor's own work, the session's window bookkeeping, input binding and
// our own kernels are all counted.
#include <catch2/catch.hpp>

#include <atomic>
#include <cstdlib>
#include <new>
#include <random>

#include "backend/library_calls.h"
#include "backend/session.h"
#include "frontend/model_spec.h"
#include "frontend/weights.h"
#include "driver/compile.h"

namespace {
thread_local bool counting = false;
std::atomic<long> allocations{0};

void* allocate(std::size_t n, std::size_t align) {
  if (counting && txl::backend::libraryCallDepth == 0) ++allocations;
  void* p = align > alignof(std::max_align_t) ? std::aligned_alloc(align, (n + align - 1) / align * align)
                                              : std::malloc(n ? n : 1);
  if (!p) throw std::bad_alloc();
  return p;
}

void* tryAllocate(std::size_t n, std::size_t align) noexcept {
  try {
    return allocate(n, align);
  } catch (...) {
    return nullptr;
  }
}

// Counts allocations made on this thread while alive.
struct Counter {
  Counter() {
    allocations = 0;
    counting = true;
  }
  ~Counter() { counting = false; }
  long count() const { return allocations; }
};
}  // namespace

void* operator new(std::size_t n) { return allocate(n, 0); }
void* operator new[](std::size_t n) { return allocate(n, 0); }
void* operator new(std::size_t n, std::align_val_t a) { return allocate(n, std::size_t(a)); }
void* operator new[](std::size_t n, std::align_val_t a) { return allocate(n, std::size_t(a)); }
void* operator new(std::size_t n, const std::nothrow_t&) noexcept { return tryAllocate(n, 0); }
void* operator new[](std::size_t n, const std::nothrow_t&) noexcept { return tryAllocate(n, 0); }
void* operator new(std::size_t n, std::align_val_t a, const std::nothrow_t&) noexcept {
  return tryAllocate(n, std::size_t(a));
}
void* operator new[](std::size_t n, std::align_val_t a, const std::nothrow_t&) noexcept {
  return tryAllocate(n, std::size_t(a));
}
void operator delete(void* p) noexcept { std::free(p); }
void operator delete(void* p, const std::nothrow_t&) noexcept { std::free(p); }
void operator delete[](void* p, const std::nothrow_t&) noexcept { std::free(p); }
void operator delete(void* p, std::align_val_t, const std::nothrow_t&) noexcept { std::free(p); }
void operator delete[](void* p, std::align_val_t, const std::nothrow_t&) noexcept { std::free(p); }
void operator delete[](void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t) noexcept { std::free(p); }
void operator delete(void* p, std::align_val_t) noexcept { std::free(p); }
void operator delete[](void* p, std::align_val_t) noexcept { std::free(p); }
void operator delete(void* p, std::size_t, std::align_val_t) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t, std::align_val_t) noexcept { std::free(p); }

using namespace txl;

namespace {

std::shared_ptr<backend::CompiledModel> compile(const std::string& memory, std::int64_t memLen) {
  nlohmann::json j = {{"n_token", 37}, {"n_layer", 2}, {"n_head", 3},       {"d_model", 16},  {"d_head", 5},
                      {"d_inner", 24}, {"tgt_len", 4}, {"mem_len", memLen}, {"clamp_len", 6}, {"same_length", true}};
  const frontend::ModelSpec spec = frontend::parseModelSpec(j, "tiny.json");
  const driver::Model model = driver::modelFrom(spec, frontend::randomWeights(spec, 3));
  driver::Setting setting = driver::defaultSetting(model);
  setting.backend = "onednn";
  if (memory == "hidden") setting.pipeline.memory = ir::MemoryForm::Hidden;
  driver::resolvePipeline(setting);
  setting.batch = 2;
  return driver::compile(model, setting);
}

std::vector<ir::Tensor> randomIds(int count, unsigned seed) {
  std::mt19937 rng(seed);
  std::vector<ir::Tensor> out;
  for (int i = 0; i < count; ++i) {
    ir::Tensor t = ir::Tensor::zeros({ir::DType::I64, {4, 2}});
    for (auto& v : t.span<std::int64_t>()) v = std::int64_t(rng() % 37);
    out.push_back(t);
  }
  return out;
}

}  // namespace

TEST_CASE("no allocation: the counter sees an allocation of ours", "[no_allocation]") {
  Counter c;
  delete new int(1);
  CHECK(c.count() == 1);
}

TEST_CASE("no allocation: a warm stream's segments allocate nothing in txlc's code", "[no_allocation]") {
  for (const std::string memory : {"kv", "hidden"}) {
    INFO("--memory " << memory);
    auto model = compile(memory, 8);
    backend::Session s(model);
    const auto tokens = randomIds(24, 1), targets = randomIds(24, 2);
    // Warm-up: mlen grows 0, 4, 8; both segment kinds (with and without NLL)
    // get their plan at the steady shape.
    for (int k = 0; k < 6; ++k) s.forward(tokens[k], k % 2 ? &targets[k] : nullptr, false);
    REQUIRE(s.mlen() == 8);
    const std::size_t plans = s.planCount();
    const std::uint64_t moved = s.stateRowsMoved();
    long count = 0;
    {
      Counter c;
      // 18 segments: the windows wrap several times (the memory moves to the
      // front of its buffer), and the NLL output is switched on and off.
      for (int k = 6; k < 24; ++k) s.forward(tokens[k], k % 3 ? &targets[k] : nullptr, false);
      count = c.count();
    }
    CHECK(count == 0);
    CHECK(s.planCount() == plans);
    if (memory == "kv") CHECK(s.stateRowsMoved() > moved);  // the compaction ran inside the measured stretch
  }
}
