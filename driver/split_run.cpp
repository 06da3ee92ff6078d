// driver/split_run.cpp - a split job's phases, rank 0's watch over the other ranks, and who reports a failure.
#include "driver/split_run.h"

#include <iostream>
#include <sstream>

#include "driver/content_hash.h"
#include "driver/rank_messages.h"

namespace txl::driver {

using Clock = std::chrono::steady_clock;

void SplitPhase::endSetup(const RunFingerprint& mine) {
  setupDone = true;
  const std::vector<Processes::SetupReport> all =
      procs.gatherSetup({0, {mine.model, mine.input, mine.options, mine.kept}});
  for (const Processes::SetupReport& r : all)
    if (r.code != 0) throw OtherRankFailed{r.code};
  static const char* const what[] = {"model content hash", "input fingerprint",
                                     "fingerprint of the options that change results",
                                     "fingerprint of the lines --resume kept"};
  for (std::size_t r = 1; r < all.size(); ++r)
    for (std::size_t k = 0; k < all[0].fingerprint.size(); ++k)
      if (all[r].fingerprint[k] != all[0].fingerprint[k])
        throw RanksDisagree{rankName(int(r), int(all.size())) + ": " + what[k] + " " + hex64(all[r].fingerprint[k]) +
                            ", expected rank 0's " + hex64(all[0].fingerprint[k]) +
                            " (every rank must be given the same model, input and options)"};
}

Peers::Peers(Processes& procs, double timeoutSeconds)
    : procs_(procs),
      timeout_(timeoutSeconds),
      heard_(std::size_t(procs.size()), Clock::now()),
      done_(std::size_t(procs.size()), false) {
  done_[0] = true;
}

void Peers::poll(std::chrono::milliseconds wait, const std::function<void(const Message&)>& handle) {
  for (auto m = procs_.receive(wait); m; m = procs_.receive(std::chrono::milliseconds(0))) {
    heard_[std::size_t(m->source)] = Clock::now();
    if (m->tag == kTagDone) {
      done_[std::size_t(m->source)] = true;
      if (!m->bytes.empty()) signal_ = decodeDone(m->bytes);
    } else {
      handle(*m);
    }
  }
  const auto now = Clock::now();
  for (int r = 1; r < procs_.size(); ++r)
    if (!done_[std::size_t(r)] && std::chrono::duration<double>(now - heard_[std::size_t(r)]).count() > timeout_) {
      std::ostringstream why;
      why << "sent nothing for " << timeout_ << " s (--rank-timeout): hung, stopped, or its node is down";
      throw RankLost{r, why.str()};
    }
}

bool Peers::allDone() const {
  for (bool d : done_)
    if (!d) return false;
  return true;
}

std::string rankName(int rank, int size) { return "rank " + std::to_string(rank) + " of " + std::to_string(size); }

int runSplit(Processes& procs, const std::function<int(SplitPhase&)>& work, const DescribeError& describe,
             const SplitExitCodes& codes) {
  SplitPhase phase{procs};
  if (procs.size() == 1) return work(phase);  // errors as every command's
  const int rank = procs.rank(), size = procs.size();
  try {
    const int code = work(phase);
    procs.finish();
    return code;
  } catch (const OtherRankFailed& f) {
    procs.finish();
    return f.code;
  } catch (const RanksDisagree& d) {
    if (rank == 0) std::cerr << "txlc: error: " << d.message << std::endl;
    procs.finish();
    return codes.input;
  } catch (const RankLost& lost) {
    std::cerr << "txlc: error: " << rankName(lost.rank, size) << ": " << lost.reason << std::endl;
    procs.abort(codes.rankFailed);
  } catch (...) {
    const auto [code, line] = describe();
    if (!phase.setupDone) {  // every rank sets up alike: the lowest failing one speaks for all
      const Processes::Failure f = procs.firstFailure(code);
      if (f.rank == rank)
        std::cerr << "txlc: " << line << (rank > 0 ? " (" + rankName(rank, size) + ")" : "") << std::endl;
      procs.finish();
      return f.code;
    }
    const std::string where = rankName(rank, size) + ": ";
    std::cerr << "txlc: " << (line.rfind("error: ", 0) == 0 ? "error: " + where + line.substr(7) : where + line)
              << std::endl;
    procs.abort(code == 0 ? codes.internal : code);
  }
  return codes.internal;  // not reached: abort() ends the process
}

}  // namespace txl::driver
