// fuzz/artifact_exec_fuzzer.cpp - libFuzzer target: a crafted artifact through execution.
//
// Bytes -> driver::parseArtifact -> driver::compile -> one segment run by a
// backend::Session: what `txlc score x.txla` does with a downloaded
// artifact, not just its parsing. As in artifact_fuzzer.cpp the checksum is
// fixed up first (it is documented, so an attacker fixes it too); an artifact
// that loads must then plan and run one segment, or stop with one txl::Error
// line. Any crash, sanitizer report or internal error is a finding. The seeds
// are small real artifacts (fuzz/corpus/artifact_exec/).
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>

#include "backend/session.h"
#include "driver/artifact.h"
#include "driver/compile.h"
#include "driver/content_hash.h"
#include "driver/model.h"
#include "fuzz/fuzz_common.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace txl;
  const std::size_t capacity = (size + 63) / 64 * 64 + 64;
  std::shared_ptr<std::byte> image(static_cast<std::byte*>(std::aligned_alloc(64, capacity)), std::free);
  if (size) std::memcpy(image.get(), data, size);
  if (size >= driver::kArtifactHeaderBytes + 8) {
    std::uint64_t total = 0;
    for (int i = 7; i >= 0; --i) total = total << 8 | std::uint64_t(std::to_integer<unsigned>(image.get()[48 + i]));
    if (total == size) {
      std::uint64_t sum = driver::contentHash(image.get(), size - 8);
      for (int i = 0; i < 8; ++i) image.get()[size - 8 + i] = std::byte(sum >> (8 * i) & 0xff);
    }
  }
  try {
    auto a = std::make_shared<driver::Artifact>(driver::parseArtifact(image, image.get(), size, "fuzz.txla"));
    driver::Model m;
    m.path = "fuzz.txla";
    m.spec = a->spec;
    m.weights = a->weights;
    m.modelId = a->modelId;
    m.artifact = a;
    driver::Setting s = driver::defaultSetting(m);
    s.threads = 1;
    // Bounded work per input: a crafted setting may be legal but large.
    if (s.batch * s.qlen > 4096 || s.memLen > 4096) return 0;
    backend::Session session(driver::compile(m, s));
    ir::Tensor tokens = ir::Tensor::zeros({ir::DType::I64, {s.qlen, s.batch}});
    for (std::int64_t i = 0; i < s.qlen * s.batch; ++i) tokens.data<std::int64_t>()[i] = i % m.spec.n_token;
    backend::ForwardResult out = session.forward(tokens, &tokens);
    fuzz::require(out.hidden != nullptr, "a segment ran without its hidden state");
  } catch (const Error& e) {
    fuzz::requireOneLine(e);
  }
  return 0;
}
