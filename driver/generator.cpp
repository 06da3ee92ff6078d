// driver/generator.cpp - encodePrompt(), Generator.
#include "driver/generator.h"

#include <algorithm>

#include "driver/finite.h"
#include "ir/check.h"

namespace txl::driver {

std::vector<std::int64_t> encodePrompt(const frontend::Vocabulary& vocab, const std::string& prompt) {
  frontend::EncodeOptions enc;
  enc.eosAtEnd = false;  // the prompt continues its last line
  std::vector<std::int64_t> ids = vocab.encode(prompt, "--prompt", enc);
  if (ids.empty()) throw Error("--prompt: expected text with at least one token, got \"" + prompt + "\"");
  return ids;
}

Generator::Generator(backend::Session& session, std::int64_t qlen, const SamplerOptions& options, std::string source)
    : session_(session), qlen_(std::max<std::int64_t>(qlen, 1)), source_(std::move(source)), sampler_(options) {
  checkSamplerOptions(options);
}

void Generator::feed(std::span<const std::int64_t> ids) {
  const std::int64_t n = std::int64_t(ids.size());
  if (tokens_.empty() || tokens_.shape()[0] != n) tokens_ = ir::Tensor::zeros({ir::DType::I64, {n, 1}});
  std::copy(ids.begin(), ids.end(), tokens_.data<std::int64_t>());
  backend::ForwardResult out = session_.forward(tokens_, nullptr, /*logprob=*/true);
  const std::int64_t nToken = out.logprob->shape().back();
  const float* last = out.logprob->data<float>() + (n - 1) * nToken;
  if (const std::int64_t k = firstNonFinite(last, nToken); k >= 0)
    throwNonFinite(
        source_,
        "the log-probability of token id " + std::to_string(k) + " after " + std::to_string(fed_ + n) + " tokens",
        last[k]);
  fed_ += n;
  row_.assign(last, last + nToken);
}

void Generator::feedPrompt(std::span<const std::int64_t> prompt) {
  if (prompt.empty()) throw Error("--prompt: expected text with at least one token");
  for (std::size_t i = 0; i < prompt.size(); i += std::size_t(qlen_))
    feed(prompt.subspan(i, std::min(prompt.size() - i, std::size_t(qlen_))));
  pending_ = -1;
}

std::int64_t Generator::next() {
  TXL_CHECK(!row_.empty(), "Generator::next() before feedPrompt()");
  if (pending_ >= 0) feed(std::span(&pending_, 1));
  pending_ = sampler_.next(row_);
  ++generated_;
  return pending_;
}

}  // namespace txl::driver
