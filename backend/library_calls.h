// backend/library_calls.h - marks the stretches of txlc's per-segment path
// that run inside oneDNN.
//
// txlc promises that its own code allocates nothing once a stream is warm
// (docs/MEMORY.md); oneDNN's C++ API and primitives may allocate inside
// execute(), which is theirs to answer for. The executor wraps every call
// into oneDNN on the hot path in a LibraryCall, and the allocation-counting
// test (tests/session/no_allocation_test.cpp) leaves out what is allocated
// while one is open on the counting thread.
#pragma once

namespace txl::backend {

inline thread_local int libraryCallDepth = 0;

struct LibraryCall {
  LibraryCall() { ++libraryCallDepth; }
  ~LibraryCall() { --libraryCallDepth; }
  LibraryCall(const LibraryCall&) = delete;
  LibraryCall& operator=(const LibraryCall&) = delete;
};

}  // namespace txl::backend
