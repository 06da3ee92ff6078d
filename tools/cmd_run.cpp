// tools/cmd_run.cpp - `txlc run MODEL --tokens "1 2 3"`: hidden states and log-probs for token ids.
//
// The ids (one stream per line or ';'-separated group, all the same length)
// run as segments of --qlen (default: all of them in one segment) through
// one Session. --state-in / --state-out resume a stream (driver/state_file.h:
// the state names its model, so a state for another model is refused).
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>

#include "frontend/atomic_file.h"
#include "frontend/input_file.h"
#include "frontend/safetensors.h"
#include "ir/check.h"
#include "tools/cli_checks.h"
#include "tools/exit_codes.h"
#include "tools/model_flags.h"
#include "driver/compile.h"
#include "driver/finite.h"
#include "driver/state_file.h"
#include "driver/text_source.h"

namespace txl::tools {

namespace {

struct Options {
  ModelFlags model;
  std::string tokens, tokensFile, stateIn, stateOut, format = "json", output;
  bool noLogprob = false;
  CLI::Option *tokensOpt = nullptr, *tokensFileOpt = nullptr;
};

// A [T, B, D] f32 tensor as nested JSON arrays.
nlohmann::json nested(const ir::Tensor& t) {
  const auto& s = t.shape();
  const float* p = t.data<float>();
  nlohmann::json out = nlohmann::json::array();
  for (std::int64_t i = 0; i < s[0]; ++i) {
    nlohmann::json row = nlohmann::json::array();
    for (std::int64_t b = 0; b < s[1]; ++b)
      row.push_back(std::vector<float>(p + (i * s[1] + b) * s[2], p + (i * s[1] + b + 1) * s[2]));
    out.push_back(std::move(row));
  }
  return out;
}

int run(const Options& o) {
  Model m = o.model.open();
  checkPipelineFlags(m, o.model.pipeline);
  const std::string source = o.tokensOpt->count() ? "--tokens" : o.tokensFile;
  const std::string text = o.tokensOpt->count() ? o.tokens : readTextFile(o.tokensFile);
  auto streams =
      frontend::parsingFile(source, "token ids", [&] { return parseTokenStreams(text, source, m.spec.n_token); });
  const std::int64_t batch = std::int64_t(streams.size()), total = std::int64_t(streams.front().size());
  if (o.model.batchOpt->count() && o.model.batch != batch)
    throw Error(source + ": " + std::to_string(batch) + " streams, expected --batch " + std::to_string(o.model.batch));
  Setting setting = o.model.setting(m);
  setting.batch = batch;
  if (!o.model.qlenOpt->count()) setting.qlen = total;  // one segment unless asked otherwise
  checkSetting(m.spec, setting);
  // The outputs count too: every position's hidden state (and log-probabilities),
  // held whole and, as JSON, written at about 20 bytes a number.
  {
    const double values = double(total) * double(batch) * double(m.spec.d_model + (o.noLogprob ? 0 : m.spec.n_token));
    const double bytes = values * (o.format == "json" ? 4.0 + 20.0 : 4.0);
    const double ram = double(::sysconf(_SC_PHYS_PAGES)) * double(::sysconf(_SC_PAGE_SIZE));
    constexpr double kMaxJsonBytes = double(std::uint64_t{1} << 30);
    if ((o.format == "json" && values * 20.0 > kMaxJsonBytes) || (ram > 0 && bytes > ram / 2))
      throw Error(source + ": " + std::to_string(total) + " positions × " + std::to_string(batch) + " streams give " +
                  std::to_string(std::uint64_t(values)) +
                  " output values, more than run writes (at most 1 GiB of JSON and half of RAM in all); "
                  "use --no-logprob, --format safetensors -o FILE, or fewer tokens");
  }
  auto compiled = compile(m, setting);
  const ir::TensorMap stateIn = o.stateIn.empty() ? ir::TensorMap{} : readStateFile(m, *compiled, o.stateIn);
  backend::Session session(compiled);
  if (!o.stateIn.empty()) loadState(session, stateIn, o.stateIn);
  noteReplanning(m, setting);
  const std::int64_t mlenIn = session.mlen();

  const bool logprob = !o.noLogprob;
  ir::Tensor tokens = ir::Tensor::zeros({ir::DType::I64, {total, batch}});
  for (std::int64_t t = 0; t < total; ++t)
    for (std::int64_t b = 0; b < batch; ++b) tokens.data<std::int64_t>()[t * batch + b] = streams[b][t];
  ir::Tensor hidden = ir::Tensor::zeros({ir::DType::F32, {total, batch, m.spec.d_model}});
  ir::Tensor lp = ir::Tensor::zeros({ir::DType::F32, {logprob ? total : 0, batch, m.spec.n_token}});
  for (std::int64_t i = 0; i < total; i += setting.qlen) {
    const std::int64_t len = std::min(setting.qlen, total - i);
    ir::Tensor seg = ir::Tensor::zeros({ir::DType::I64, {len, batch}});
    std::copy_n(tokens.data<std::int64_t>() + i * batch, len * batch, seg.data<std::int64_t>());
    backend::ForwardResult out = session.forward(seg, nullptr, logprob);
    // No NaN or Inf is written as a result: the first names its position (time-major: token, then stream).
    auto check = [&](const ir::Tensor* t, const char* what, std::int64_t width) {
      if (const std::int64_t k = firstNonFinite(t->data<float>(), t->numel()); k >= 0)
        throwNonFinite(m.path,
                       std::string(what) + " of token " + std::to_string(i + k / width / batch + 1) + " of stream " +
                           std::to_string(k / width % batch),
                       t->data<float>()[k]);
    };
    check(out.hidden, "the hidden state", m.spec.d_model);
    if (logprob) check(out.logprob, "the log-probabilities", m.spec.n_token);
    std::copy_n(out.hidden->data<float>(), out.hidden->numel(), hidden.data<float>() + i * batch * m.spec.d_model);
    if (logprob)
      std::copy_n(out.logprob->data<float>(), out.logprob->numel(), lp.data<float>() + i * batch * m.spec.n_token);
  }
  if (!o.stateOut.empty()) writeStateFile(session, m, setting, o.stateOut);

  if (o.format == "safetensors") {
    std::vector<std::pair<std::string, ir::Tensor>> out = {{"tokens", tokens}, {"hidden", hidden}};
    if (logprob) out.emplace_back("logprob", lp);
    frontend::writeSafetensors(o.output, out, {{"model_id", m.modelId}, {"mlen_in", std::to_string(mlenIn)}});
    return kExitOk;
  }
  nlohmann::json j = {{"model_id", m.modelId},
                      {"semantics", frontend::semanticsName(m.spec.semantics)},
                      {"initial_memory", frontend::initialMemoryName(setting.initialMemory)},
                      {"precision", precisionName(setting.precision)},
                      {"batch", batch},
                      {"qlen", total},
                      {"mlen_in", mlenIn},
                      {"mlen_out", session.mlen()},
                      {"tokens", streams},
                      {"hidden", nested(hidden)}};
  if (logprob) j["logprob"] = nested(lp);
  if (o.output.empty() || o.output == "-") {
    std::cout << j.dump() << std::endl;
  } else {
    const std::string text = j.dump() + '\n';
    frontend::AtomicFile f(o.output, 0644);
    f.write(text.data(), text.size());
    f.commit();
  }
  return kExitOk;
}

}  // namespace

void registerRun(CLI::App& app, Action& action) {
  auto o = std::make_shared<Options>();
  CLI::App* cmd = app.add_subcommand("run", "hidden states and log-probabilities for token ids");
  o->model.add(*cmd);
  o->tokensOpt = cmd->add_option("--tokens", o->tokens, "token ids: \"1 2 3\"; streams separated by ';'");
  o->tokensFileOpt = cmd->add_option("--tokens-file", o->tokensFile, "a file of token ids, one stream per line");
  o->tokensOpt->excludes(o->tokensFileOpt);
  cmd->add_option("--state-in", o->stateIn, "start from the memory saved in this state file");
  cmd->add_option("--state-out", o->stateOut, "save the memory after the last segment to this state file");
  cmd->add_option("--format", o->format, "json (default) or safetensors (needs -o)")
      ->check(CLI::IsMember({"json", "safetensors"}));
  cmd->add_option("-o,--output", o->output, "write the result here instead of stdout (-: stdout)")
      ->check(nonEmptyPath());
  cmd->add_flag("--no-logprob", o->noLogprob, "only the hidden states");
  cmd->callback([o, &action] {
    if (!o->tokensOpt->count() && !o->tokensFileOpt->count()) throw CLI::RequiredError("--tokens or --tokens-file");
    if (o->format == "safetensors" && o->output.empty())
      throw CLI::ValidationError("--format safetensors", "needs -o FILE (binary output does not go to stdout)");
    if (o->format == "safetensors" && o->output == "-")
      throw CLI::ValidationError("-o -", "--format safetensors is binary and does not go to stdout; give a file");
    action = [o] { return run(*o); };
  });
}

}  // namespace txl::tools
