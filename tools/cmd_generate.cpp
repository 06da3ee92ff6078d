// tools/cmd_generate.cpp - `txlc generate MODEL_OR_ARTIFACT --prompt TEXT`: sampling with the memory.
//
// The prompt is fed in segments of qlen tokens; then every new token is fed
// alone (qlen 1) against the memory (driver/generator.h), and printed (and
// flushed) as soon as it is chosen. Same seed, same text (driver/sampler.h).
#include <chrono>
#include <iostream>
#include <limits>
#include <nlohmann/json.hpp>

#include "ir/check.h"
#include "tools/cli_checks.h"
#include "tools/exit_codes.h"
#include "tools/model_flags.h"
#include "driver/compile.h"
#include "driver/generator.h"
#include "frontend/atomic_file.h"

namespace txl::tools {

namespace {

struct Options {
  ModelFlags model;
  std::string prompt;
  std::int64_t count = 200;
  SamplerOptions sampler;
  CLI::Option *temperatureOpt = nullptr, *topKOpt = nullptr, *topPOpt = nullptr;
  bool noEcho = false;
  bool json = false;
};

int run(const Options& o) {
  Model m = o.model.open();
  Setting setting = o.model.setting(m);
  const frontend::Vocabulary& vocab = requireVocabulary(m, "generate");
  std::vector<std::int64_t> prompt = encodePrompt(vocab, o.prompt);
  if (const std::int64_t unknown = vocab.countUnknown(o.prompt); unknown > 0)
    std::cerr << "txlc: warning: --prompt: " << unknown << " unknown word" << (unknown == 1 ? "" : "s")
              << ", read as <unk>" << std::endl;

  auto compiled = compile(m, setting);
  backend::Session session(compiled);
  Generator generator(session, setting.qlen, o.sampler, m.path);
  noteReplanning(m, setting);
  const auto start = std::chrono::steady_clock::now();

  if (!o.noEcho && !o.json) std::cout << vocab.decode(prompt) << std::flush;
  std::vector<std::int64_t> generated;
  std::int64_t previous = prompt.back();
  // SIGINT/SIGTERM end the text where it is: the line ended, the timing line printed.
  frontend::catchInterrupts();
  generator.feedPrompt(prompt);
  const auto promptDone = std::chrono::steady_clock::now();
  for (std::int64_t k = 0; k < o.count && frontend::interruptSignal() == 0; ++k) {
    std::int64_t id = generator.next();
    generated.push_back(id);
    if (!o.json) std::cout << vocab.decodeToken(id, previous) << std::flush;
    previous = id;
  }
  const auto end = std::chrono::steady_clock::now();
  const double promptSeconds = std::chrono::duration<double>(promptDone - start).count();
  const double genSeconds = std::chrono::duration<double>(end - promptDone).count();
  const int sig = frontend::interruptSignal();
  const std::int64_t count = std::int64_t(generated.size());
  if (o.json) {
    std::cout << nlohmann::json{{"prompt", o.prompt},
                                {"prompt_tokens", prompt.size()},
                                {"text", vocab.decode(generated)},
                                {"token_ids", generated},
                                {"seed", o.sampler.seed},
                                {"interrupted", sig != 0},
                                {"tokens_per_second", genSeconds > 0 ? double(count) / genSeconds : 0.0}}
                     .dump(2)
              << std::endl;
  } else {
    std::cout << std::endl;
  }
  std::cerr << "txlc: generated " << count << (sig ? " tokens (interrupted) in " : " tokens in ") << genSeconds
            << " s (prompt " << prompt.size() << " tokens in " << promptSeconds << " s, " << session.planCount()
            << " plans)" << std::endl;
  return sig ? 128 + sig : kExitOk;
}

}  // namespace

void registerGenerate(CLI::App& app, Action& action) {
  auto o = std::make_shared<Options>();
  CLI::App* cmd = app.add_subcommand("generate", "sample text from a prompt, one token at a time with the memory");
  o->model.add(*cmd, ModelFlags::Shape::NoBatch);
  cmd->add_option("-p,--prompt", o->prompt, "the text to continue")->required();
  cmd->add_option("-n,--tokens,--n-predict,--max-new-tokens", o->count, "tokens to generate (default 200)")
      ->check(nonNegativeInt());
  cmd->add_flag("--greedy", o->sampler.greedy, "always the most likely token");
  o->temperatureOpt = cmd->add_option("--temperature,--temp", o->sampler.temperature,
                                      "divide log-probabilities by T (default 1; 0: greedy, the most likely token)")
                          ->check(realIn(0, 1e6, false, "a number at least 0 (0: greedy)"));
  o->topKOpt = cmd->add_option("--top-k", o->sampler.topK, "sample among the K most likely tokens (default 0: all)")
                   ->check(nonNegativeInt());
  o->topPOpt =
      cmd->add_option("--top-p", o->sampler.topP, "sample among the most likely tokens holding mass P (default 1)")
          ->check(realIn(0, 1, true, "a number in (0, 1]"));
  cmd->add_option("--seed", o->sampler.seed, "random seed (default 0); the same seed gives the same text")
      ->check(integerIn(0, std::numeric_limits<std::int64_t>::max(), "a non-negative integer"));
  cmd->add_flag("--no-echo", o->noEcho, "print only the generated text, not the prompt");
  cmd->add_flag("--json", o->json, "print {prompt, text, token_ids, ...} at the end instead of streaming");
  cmd->callback([o, &action] {
    // --greedy with --temperature 0 says the same thing twice; with any other sampling flag it contradicts it.
    const bool temperatureZero = o->temperatureOpt->count() && o->sampler.temperature == 0;
    if (o->sampler.greedy &&
        ((o->temperatureOpt->count() && !temperatureZero) || o->topKOpt->count() || o->topPOpt->count()))
      throw CLI::ValidationError("--greedy", "excludes --temperature, --top-k and --top-p");
    action = [o] { return run(*o); };
  });
}

}  // namespace txl::tools
