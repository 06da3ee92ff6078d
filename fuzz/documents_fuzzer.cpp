// fuzz/documents_fuzzer.cpp - libFuzzer target: a documents file (score --documents) and an earlier output (--resume).
//
// Bytes -> driver::parseDocuments, as JSON Lines, as plain lines and by
// detection (the first byte picks which), then the documents' output lines
// -> driver::completedPrefix against them (every line must be accepted
// back), and the bytes themselves as an earlier output. A line past the
// bounds of driver/documents.h (length, nesting, values, "id" size) must be
// refused with one txl::Error line, never crash or exhaust memory.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "driver/documents.h"
#include "fuzz/fuzz_common.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace txl;
  using namespace txl::driver;
  if (size == 0) return 0;
  const DocumentFormat format = data[0] % 3 == 0   ? DocumentFormat::JsonLines
                                : data[0] % 3 == 1 ? DocumentFormat::Lines
                                                   : DocumentFormat::Auto;
  const std::string_view text(reinterpret_cast<const char*>(data) + 1, size - 1);
  try {
    const std::vector<Document> docs = parseDocuments(text, "docs.jsonl", format);
    (void)corpusFingerprint(docs);
    // What a run would write for them is read back whole by --resume.
    std::string out;
    for (const Document& d : docs)
      out += (d.error.empty() ? documentLine(d.id, {2, 1.5}, 0) : documentErrorLine(d.id, d.error)) + "\n";
    std::size_t bytes = 0;
    fuzz::require(completedPrefix(out, docs, "o.jsonl", &bytes) == docs.size() && bytes == out.size(),
                  "an output line a run writes is not read back by --resume");
    // The bytes as an earlier output of that corpus.
    try {
      (void)completedPrefix(text, docs, "o.jsonl.partial");
    } catch (const Error& e) {
      fuzz::requireOneLine(e);
    }
  } catch (const Error& e) {
    fuzz::requireOneLine(e);
  }
  return 0;
}
