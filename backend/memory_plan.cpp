// backend/memory_plan.cpp - greedy-by-size offset assignment and its figures.
#include "backend/memory_plan.h"

#include <algorithm>
#include <limits>
#include <numeric>
#include <tuple>

#include "ir/check.h"

namespace txl::backend {

namespace {

bool liveTogether(const BufferRequest& a, const BufferRequest& b) { return a.first <= b.last && b.first <= a.last; }

// The most bytes live at any step: a sweep over start and end events, ends
// at step s counted after the starts at s (ranges are inclusive).
std::size_t peakLive(const std::vector<PlannedBuffer>& buffers) {
  struct Event {
    std::size_t step;
    int end;  // 0: start, 1: end
    std::size_t size;
  };
  std::vector<Event> events;
  for (const PlannedBuffer& b : buffers) {
    events.push_back({b.request.first, 0, b.size});
    events.push_back({b.request.last, 1, b.size});
  }
  std::sort(events.begin(), events.end(),
            [](const Event& a, const Event& b) { return std::tie(a.step, a.end) < std::tie(b.step, b.end); });
  std::size_t live = 0, peak = 0;
  for (const Event& e : events) {
    if (e.end) {
      live -= e.size;
    } else {
      live += e.size;
      peak = std::max(peak, live);
    }
  }
  return peak;
}

}  // namespace

MemoryPlan planMemory(const std::vector<BufferRequest>& requests, std::size_t alignment) {
  TXL_CHECK(alignment > 0, "memory plan alignment must be positive");
  MemoryPlan plan;
  plan.buffers.reserve(requests.size());
  for (const BufferRequest& r : requests) {
    TXL_CHECK(r.first <= r.last, "buffer '" + r.label + "' ends before it starts");
    TXL_CHECK(r.bytes <= std::numeric_limits<std::size_t>::max() - alignment, "buffer '" + r.label + "' is too large");
    const std::size_t size = (r.bytes + alignment - 1) / alignment * alignment;
    plan.buffers.push_back({r, 0, size});
    plan.noReuseBytes += size;
  }

  std::vector<std::size_t> order(requests.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    const PlannedBuffer &x = plan.buffers[a], &y = plan.buffers[b];
    return x.size != y.size ? x.size > y.size : x.request.first < y.request.first;
  });

  std::vector<std::size_t> placed;     // indices, in placement order
  std::vector<std::size_t> neighbors;  // placed and live together with the current one
  for (std::size_t i : order) {
    PlannedBuffer& b = plan.buffers[i];
    neighbors.clear();
    for (std::size_t j : placed)
      if (liveTogether(plan.buffers[j].request, b.request)) neighbors.push_back(j);
    std::sort(neighbors.begin(), neighbors.end(),
              [&](std::size_t x, std::size_t y) { return plan.buffers[x].offset < plan.buffers[y].offset; });
    // Best fit: the smallest gap between neighbors that holds b, else the top.
    std::size_t cursor = 0, best = std::numeric_limits<std::size_t>::max();
    std::size_t bestGap = std::numeric_limits<std::size_t>::max();
    for (std::size_t j : neighbors) {
      const PlannedBuffer& n = plan.buffers[j];
      if (n.offset >= cursor && n.offset - cursor >= b.size && n.offset - cursor < bestGap) {
        best = cursor;
        bestGap = n.offset - cursor;
      }
      cursor = std::max(cursor, n.offset + n.size);
    }
    b.offset = best != std::numeric_limits<std::size_t>::max() ? best : cursor;
    plan.arenaBytes = std::max(plan.arenaBytes, b.offset + b.size);
    placed.push_back(i);
  }
  plan.lowerBoundBytes = peakLive(plan.buffers);
  return plan;
}

std::string findConflict(const MemoryPlan& plan) {
  const auto& bs = plan.buffers;
  for (std::size_t i = 0; i < bs.size(); ++i)
    for (std::size_t j = i + 1; j < bs.size(); ++j) {
      const PlannedBuffer &a = bs[i], &b = bs[j];
      const bool memory = a.offset < b.offset + b.size && b.offset < a.offset + a.size;
      if (memory && a.size > 0 && b.size > 0 && liveTogether(a.request, b.request))
        return "'" + a.request.label + "' and '" + b.request.label + "'";
    }
  return {};
}

}  // namespace txl::backend
