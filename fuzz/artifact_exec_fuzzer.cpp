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
#include "fuzz/artifact_image.h"
#include "fuzz/fuzz_common.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace txl;
  std::shared_ptr<std::byte> image = fuzz::artifactImage(data, size);
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
