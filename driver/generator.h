// driver/generator.h - generating text: a prompt fed in segments, then one token at a time against the memory.
//
// The prompt is fed in segments of qlen tokens; the last row of the last
// segment's log-probabilities is the distribution of the first new token.
// Every token chosen is fed alone (qlen 1) only when the next one is asked
// for, so generating n tokens runs n - 1 single-token segments after the
// prompt. Same prompt, setting and sampler seed: the same tokens
// (driver/sampler.h).
//
//   std::vector<std::int64_t> prompt = encodePrompt(vocab, "In the beginning");
//   Generator g(session, setting.qlen, {.temperature = 0.7, .seed = 1});
//   g.feedPrompt(prompt);
//   for (int k = 0; k < 100; ++k) std::cout << vocab.decodeToken(g.next(), previous);
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "backend/session.h"
#include "driver/sampler.h"
#include "frontend/vocabulary.h"

namespace txl::driver {

// The prompt's token ids (a word-level prompt continues its last line: no
// "<eos>" after it); txl::Error when it has none.
std::vector<std::int64_t> encodePrompt(const frontend::Vocabulary& vocab, const std::string& prompt);

class Generator {
 public:
  // `session` must outlive the generator; `qlen` is the prompt's segment length;
  // `source` (the model's path) names where a non-finite log-probability came from.
  Generator(backend::Session& session, std::int64_t qlen, const SamplerOptions& options,
            std::string source = "generate");
  // Feeds the prompt (at least one token).
  void feedPrompt(std::span<const std::int64_t> prompt);
  // The next token: feeds the one chosen before (if any), then samples.
  std::int64_t next();
  // Tokens chosen so far.
  std::int64_t generated() const { return generated_; }

 private:
  void feed(std::span<const std::int64_t> ids);

  backend::Session& session_;
  std::int64_t qlen_;
  std::string source_;
  Sampler sampler_;
  std::vector<float> row_;  // the distribution of the next token
  std::int64_t pending_ = -1;
  std::int64_t generated_ = 0;
  std::int64_t fed_ = 0;  // tokens run through the session so far (prompt and generated)
  ir::Tensor tokens_;
};

}  // namespace txl::driver
