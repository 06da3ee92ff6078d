// driver/scorer.h - scoring a token sequence as the reference's eval.py does.
//
// The sequence is cut into `batch` contiguous streams (the reference's
// LMOrderedIterator: stream b holds tokens [b*n, (b+1)*n) with n = size/batch;
// the remainder is dropped). Every token after a stream's first is predicted:
// segments of qlen inputs (the last one shorter) with their next tokens as
// targets, run through one Session so the memory carries across segments.
// NLLs are summed in double, per stream in token order, then the streams in
// order: a fixed order that a run split between processes (each running a
// share of the streams, ScoreOptions::streams) reproduces bit for bit, as
// long as a stream's NLLs do not depend on the batch it ran in (docs/SCALE.md).
//
//   backend::Session session(compiled);
//   ScoreResult r = scoreTokens(session, ids, {.qlen = 64});
//   r.nllSum / r.scored;
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <vector>

#include "backend/session.h"

namespace txl::driver {

struct ScoreOptions {
  std::int64_t qlen = 64;
  bool perToken = false;
  // Called after every segment with (tokens scored so far, tokens to score,
  // the sum of their NLLs in nats): a running estimate.
  std::function<void(std::int64_t, std::int64_t, double)> progress;
  // Asked before every segment but the first: true ends the scoring there,
  // the result holding the segments done (ScoreResult::interrupted).
  std::function<bool()> stop;
  // The cut is into `streams` streams (0: the session's batch), of which this
  // call runs [firstStream, firstStream + batch): a share of a split run.
  std::int64_t streams = 0;
  std::int64_t firstStream = 0;
};

struct ScoreResult {
  std::int64_t batch = 1;         // streams run (the session's batch)
  std::int64_t streams = 1;       // streams of the cut
  std::int64_t firstStream = 0;   // the first stream run
  std::int64_t streamLength = 0;  // tokens per stream
  std::int64_t dropped = 0;       // tokens left over by the cut into streams
  std::int64_t scored = 0;        // tokens predicted: batch * (streamLength - 1)
  std::int64_t segments = 0;
  double nllSum = 0;                     // nats: the sum of streamNll in order
  double nllSquares = 0;                 // the sum of streamNllSquares in order (for the standard error)
  std::vector<double> streamNll;         // per stream run, in token order
  std::vector<double> streamNllSquares;  // per stream run: the sum of each token's NLL squared
  bool interrupted = false;              // ScoreOptions::stop ended it: scored < batch * (streamLength - 1)
  std::vector<float> perToken;           // stream-major: stream b, positions 1..streamLength-1
};

// The standard error of the mean per-token NLL of `n` tokens whose NLLs sum
// to `sum` and their squares to `squares`: sqrt(s^2 / n), s^2 the sample
// variance (0 for fewer than 2 tokens).
double nllStandardError(double sum, double squares, std::int64_t n);

// `ids` must hold at least 2 * batch tokens (txl::Error otherwise, naming `source`).
ScoreResult scoreTokens(backend::Session& session, std::span<const std::int64_t> ids, const ScoreOptions& options,
                        const std::string& source = "input");
// The check scoreTokens() makes first, for a command to make before it compiles anything.
void checkScoreLength(std::int64_t tokens, std::int64_t batch, const std::string& source);

}  // namespace txl::driver
