// driver/scorer.cpp - scoreTokens().
#include "driver/scorer.h"

#include <algorithm>
#include <cmath>

#include "driver/finite.h"
#include "ir/check.h"

namespace txl::driver {

void checkScoreLength(std::int64_t tokens, std::int64_t batch, const std::string& source) {
  if (tokens / batch < 2)
    throw Error(source + ": " + std::to_string(tokens) + " tokens, expected at least " + std::to_string(2 * batch) +
                " (2 per stream with batch " + std::to_string(batch) + ") to predict anything");
}

double nllStandardError(double sum, double squares, std::int64_t n) {
  if (n < 2) return 0.0;
  const double mean = sum / double(n);
  const double variance = std::max(0.0, (squares - mean * sum) / double(n - 1));
  return std::sqrt(variance / double(n));
}

ScoreResult scoreTokens(backend::Session& session, std::span<const std::int64_t> ids, const ScoreOptions& options,
                        const std::string& source) {
  const std::int64_t batch = session.model().info().batch;
  const std::int64_t streams = options.streams > 0 ? options.streams : batch;
  const std::int64_t n = std::int64_t(ids.size());
  TXL_CHECK(options.qlen >= 1, "qlen must be positive");
  TXL_CHECK(options.firstStream >= 0 && options.firstStream + batch <= streams, "the streams run are not in the cut");
  checkScoreLength(n, streams, source);
  ScoreResult r;
  r.batch = batch;
  r.streams = streams;
  r.firstStream = options.firstStream;
  r.streamLength = n / streams;
  r.dropped = n - r.streamLength * streams;
  r.streamNll.assign(std::size_t(batch), 0.0);
  r.streamNllSquares.assign(std::size_t(batch), 0.0);
  const std::int64_t total = batch * (r.streamLength - 1);
  if (options.perToken) r.perToken.assign(std::size_t(total), 0.0f);
  const auto at = [&](std::int64_t t, std::int64_t b) {
    return ids[std::size_t((options.firstStream + b) * r.streamLength + t)];
  };

  for (std::int64_t i = 0; i < r.streamLength - 1; i += options.qlen) {
    if (i > 0 && options.stop && options.stop()) {
      r.interrupted = true;
      break;
    }
    const std::int64_t len = std::min(options.qlen, r.streamLength - 1 - i);
    ir::Tensor tokens = ir::Tensor::zeros({ir::DType::I64, {len, batch}});
    ir::Tensor targets = ir::Tensor::zeros({ir::DType::I64, {len, batch}});
    auto* tok = tokens.data<std::int64_t>();
    auto* tgt = targets.data<std::int64_t>();
    for (std::int64_t t = 0; t < len; ++t)
      for (std::int64_t b = 0; b < batch; ++b) {
        tok[t * batch + b] = at(i + t, b);
        tgt[t * batch + b] = at(i + t + 1, b);
      }
    backend::ForwardResult out = session.forward(tokens, &targets, /*logprob=*/false);
    const float* nll = out.nll->data<float>();
    for (std::int64_t t = 0; t < len; ++t)
      for (std::int64_t b = 0; b < batch; ++b) {
        const float v = nll[t * batch + b];
        if (!std::isfinite(v))
          throwNonFinite(source,
                         "the NLL of token " + std::to_string(i + t + 1) + " of stream " +
                             std::to_string(options.firstStream + b) + " (segment at token " + std::to_string(i) + ")",
                         v);
        r.streamNll[std::size_t(b)] += double(v);
        r.streamNllSquares[std::size_t(b)] += double(v) * double(v);
      }
    if (options.perToken)
      for (std::int64_t t = 0; t < len; ++t)
        for (std::int64_t b = 0; b < batch; ++b)
          r.perToken[std::size_t(b * (r.streamLength - 1) + i + t)] = nll[t * batch + b];
    r.scored += len * batch;
    ++r.segments;
    if (options.progress) {
      double sum = 0;
      for (double s : r.streamNll) sum += s;
      options.progress(r.scored, total, sum);
    }
  }
  for (double s : r.streamNll) r.nllSum += s;
  for (double s : r.streamNllSquares) r.nllSquares += s;
  return r;
}

}  // namespace txl::driver
