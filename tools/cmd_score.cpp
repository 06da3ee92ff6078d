// tools/cmd_score.cpp - `txlc score MODEL_OR_ARTIFACT FILE` and `txlc score MODEL --documents FILE`.
//
// FILE: streams the tokens of FILE through segments with the recurrent
// memory, as the reference's eval.py scores a split (driver/scorer.h), and
// prints the totals; --json gives stable keys (docs/CLI.md).
// --documents: one JSON line per document, in input order
// (driver/documents.h), written atomically with -o, resumable with --resume.
//
// Under an MPI launcher (`mpirun -np N txlc score ...`, driver/distributed.h)
// every rank reads the model and the input and takes a share - documents,
// or a contiguous share of the --batch streams - and rank 0 collects the
// others' results, reduces them in a fixed order and writes the output, so
// that the figures are the single process's bit for bit (docs/SCALE.md). A
// problem found while setting up is reported once, by the lowest rank that
// met it; a rank failing later prints one line naming itself and ends the
// job; rank 0 gives up on a rank silent for --rank-timeout seconds.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <cmath>
#include <filesystem>
#include <cstring>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>

#include "driver/compile.h"
#include "driver/distributed.h"
#include "driver/documents.h"
#include "driver/finite.h"
#include "driver/scorer.h"
#include "driver/text_source.h"
#include "frontend/atomic_file.h"
#include "ir/check.h"
#include "tools/cli_checks.h"
#include "tools/exit_codes.h"
#include "tools/model_flags.h"
#include "driver/score_report.h"

namespace txl::tools {

namespace {

using Clock = std::chrono::steady_clock;

struct Options {
  ModelFlags model;
  std::string file;
  bool ids = false;
  bool json = false;
  bool perToken = false;
  std::string documents, output, summary, documentsFormat = "auto";
  bool resume = false, strict = false;
  std::int64_t maxTokens = std::int64_t(1) << 20;
  double rankTimeout = 120;
  bool progress = false, noProgress = false;  // neither: a running estimate when stderr is a terminal
  double maxUnkFraction = 0.10;
  bool showProgress() const { return progress || (!noProgress && stderrIsTerminal()); }
};

// Message tags between ranks.
constexpr int kTagDocuments = 1;  // finished documents and the tokens predicted since the last message
constexpr int kTagDone = 2;       // the sender stopped: its share complete, or (a signal number) interrupted
constexpr int kTagStreams = 3;    // a share of the streams of one text: its NLLs

// "\n" -> "\\n" so that a per-token line stays one line.
std::string printable(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '\n') out += "\\n";
    else if (c == '\t') out += "\\t";
    else out += c;
  }
  return out;
}

// --- the messages: plain little-endian fields ---------------------------------

class Writer {
 public:
  template <typename T>
  void put(T v) {
    const char* p = reinterpret_cast<const char*>(&v);
    bytes.append(p, sizeof v);
  }
  template <typename T>
  void putAll(const std::vector<T>& v) {
    put(std::uint64_t(v.size()));
    bytes.append(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(T));
  }
  std::string bytes;
};

class Reader {
 public:
  explicit Reader(const std::string& b) : b_(b) {}
  template <typename T>
  T get() {
    TXL_CHECK(pos_ + sizeof(T) <= b_.size(), "a message from another rank is truncated");
    T v;
    std::memcpy(&v, b_.data() + pos_, sizeof v);
    pos_ += sizeof v;
    return v;
  }
  template <typename T>
  std::vector<T> getAll() {
    const auto n = get<std::uint64_t>();
    TXL_CHECK(pos_ + n * sizeof(T) <= b_.size(), "a message from another rank is truncated");
    std::vector<T> v(n);
    if (n > 0) std::memcpy(v.data(), b_.data() + pos_, n * sizeof(T));  // an empty vector's data() may be null
    pos_ += n * sizeof(T);
    return v;
  }

 private:
  const std::string& b_;
  std::size_t pos_ = 0;
};

// --- a split run's phases and failures ----------------------------------------

// Another rank reported a problem while setting up: this rank stops quietly with its code.
struct OtherRankFailed {
  int code;
};
// A rank that rank 0 gave up on (silent too long).
struct RankLost {
  int rank;
  std::string reason;
};

struct Phase {
  Processes& procs;
  bool setupDone = false;
  // Every rank calls it once its setup succeeded (a collective).
  void endSetup() {
    setupDone = true;
    const Processes::Failure f = procs.firstFailure(0);
    if (f.rank >= 0) throw OtherRankFailed{f.code};
  }
};

// The exit code and message main() would give for the exception in flight.
std::pair<int, std::string> describeCurrent() {
  try {
    throw;
  } catch (const Error& e) {
    return {kExitBadInput, std::string("error: ") + oneLine(e.what())};
  } catch (const InternalError& e) {
    return {kExitInternal, oneLine(e.what())};
  } catch (const std::bad_alloc&) {
    return {kExitBadInput, "error: out of memory"};
  } catch (const std::exception& e) {
    return {kExitInternal, std::string("internal error: ") + oneLine(e.what())};
  }
}

std::string rankName(int rank, int size) { return "rank " + std::to_string(rank) + " of " + std::to_string(size); }

// Rank 0's view of the other ranks: when each was last heard from, which are done.
class Peers {
 public:
  Peers(Processes& procs, double timeoutSeconds)
      : procs_(procs),
        timeout_(timeoutSeconds),
        heard_(std::size_t(procs.size()), Clock::now()),
        done_(std::size_t(procs.size()), false) {
    done_[0] = true;
  }
  // Handles every message that has arrived (waiting up to `wait` for the first).
  template <typename Handle>
  void poll(std::chrono::milliseconds wait, Handle handle) {
    for (auto m = procs_.receive(wait); m; m = procs_.receive(std::chrono::milliseconds(0))) {
      heard_[std::size_t(m->source)] = Clock::now();
      if (m->tag == kTagDone) {
        done_[std::size_t(m->source)] = true;
        if (!m->bytes.empty()) signal_ = int(static_cast<unsigned char>(m->bytes[0]));
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
  bool allDone() const {
    for (bool d : done_)
      if (!d) return false;
    return true;
  }
  // The signal a rank said it stopped on before its share was done (0: none).
  int interruptedBy() const { return signal_; }

 private:
  Processes& procs_;
  double timeout_;
  std::vector<Clock::time_point> heard_;
  std::vector<bool> done_;
  int signal_ = 0;
};

// A progress line on stderr (when it is a terminal), at most 5 a second.
class Progress {
 public:
  explicit Progress(bool on) : on_(on), start_(Clock::now()), last_(start_) {}
  void show(const std::string& what, std::int64_t tokens, bool force = false) {
    if (!on_) return;
    const auto now = Clock::now();
    if (!force && now - last_ < std::chrono::milliseconds(200)) return;
    last_ = now;
    const double secs = std::chrono::duration<double>(now - start_).count();
    std::cerr << "\rtxlc: score: " << what << ", " << std::fixed << std::setprecision(0)
              << (secs > 0 ? double(tokens) / secs : 0.0) << " tokens/s   " << std::defaultfloat << std::flush;
  }
  void clear() {
    if (on_) std::cerr << "\r\033[K" << std::flush;
  }

 private:
  bool on_;
  Clock::time_point start_, last_;
};

// The running estimate of a text's scoring on stderr: on a terminal one line
// rewritten at most 5 times a second, else (--progress into a file or pipe)
// a line at most every second, the first after the first segment.
class Estimate {
 public:
  Estimate(bool on, bool characters)
      : on_(on), terminal_(stderrIsTerminal()), characters_(characters), start_(Clock::now()) {}
  void show(std::int64_t done, std::int64_t total, double nllSum, const std::string& where) {
    if (!on_ || done <= 0) return;
    const auto now = Clock::now();
    if (shown_ && now - last_ < std::chrono::milliseconds(terminal_ ? 200 : 1000)) return;
    shown_ = true;
    last_ = now;
    const double secs = std::chrono::duration<double>(now - start_).count();
    const double rate = secs > 0 ? double(done) / secs : 0.0;
    const double perToken = nllSum / double(done);
    std::ostringstream line;
    line << "txlc: score: " << done << "/" << total << " tokens (" << std::fixed << std::setprecision(1)
         << 100.0 * double(done) / double(total) << " %)" << where << ", perplexity " << std::setprecision(3)
         << std::exp(perToken);
    if (characters_) line << ", bpc " << std::setprecision(4) << perToken / std::log(2.0);
    line << ", " << std::setprecision(0) << rate << " tokens/s, ETA ";
    const double eta = rate > 0 ? double(total - done) / rate : 0.0;
    if (eta >= 60) line << std::int64_t(eta) / 60 << "m" << std::setw(2) << std::setfill('0') << std::int64_t(eta) % 60 << "s";
    else line << std::setprecision(0) << eta << "s";
    if (terminal_) std::cerr << "\r" << line.str() << "\033[K" << std::flush;
    else std::cerr << line.str() << std::endl;
  }
  void clear() {
    if (on_ && terminal_ && shown_) std::cerr << "\r\033[K" << std::flush;
  }

 private:
  bool on_, terminal_, characters_, shown_ = false;
  Clock::time_point start_, last_;
};

// 128 + the signal that interrupted the command.
int interruptedExit() { return 128 + frontend::interruptSignal(); }

// --- FILE: one text, cut into --batch streams ---------------------------------

int runText(const Options& o, Processes& procs, Phase& phase) {
  const int rank = procs.rank(), ranks = procs.size();
  Model m = o.model.open();
  Setting setting = o.model.setting(m);

  const ScoreInput in = scoreInputFromFile(m, o.file, o.ids);
  checkUnknownFraction(in, o.maxUnkFraction);
  const std::vector<std::int64_t>& ids = in.ids;
  const std::int64_t streams = setting.batch;
  checkScoreLength(std::int64_t(ids.size()), streams, o.file);
  if (streams < ranks)
    throw Error("--batch " + std::to_string(streams) + ": " + std::to_string(ranks) +
                " ranks share the streams of one text, expected --batch >= " + std::to_string(ranks));
  // This rank's share: a contiguous run of streams, the first ranks one more.
  const std::int64_t first = streams * rank / ranks, count = streams * (rank + 1) / ranks - first;
  Setting share = setting;
  share.batch = count;

  auto compiled = compile(m, share);
  backend::Session session(compiled);
  phase.endSetup();
  if (rank == 0) noteReplanning(m, setting);

  ScoreOptions so;
  so.qlen = setting.qlen;
  so.perToken = o.perToken;
  so.streams = streams;
  so.firstStream = first;
  Estimate progress(rank == 0 && o.showProgress(), in.characters >= 0);
  std::optional<Peers> peers;
  if (rank == 0 && ranks > 1) peers.emplace(procs, o.rankTimeout);
  // A single process ends cleanly on SIGINT/SIGTERM, with the totals so far;
  // a split run is ended by its launcher.
  if (ranks == 1) {
    frontend::catchInterrupts();
    so.stop = [] { return frontend::interruptSignal() != 0; };
  }
  // Rank 0 collects the other shares' NLLs (per stream, and per token when asked).
  std::vector<double> streamNll(std::size_t(streams), 0.0);
  std::vector<float> perToken;
  std::int64_t streamLength = std::int64_t(ids.size()) / streams;
  if (o.perToken && rank == 0) perToken.assign(std::size_t(streams * (streamLength - 1)), 0.0f);
  std::vector<double> streamNllSquares(std::size_t(streams), 0.0);
  std::int64_t othersDone = 0;  // tokens the other ranks reported
  double othersNll = 0;         // the sum of their NLLs, for the running estimate
  const auto handle = [&](const Message& msg) {
    Reader r(msg.bytes);
    const auto at = r.get<std::int64_t>();
    const std::vector<double> nll = r.getAll<double>();
    const std::vector<double> squares = r.getAll<double>();
    const std::vector<float> tokens = r.getAll<float>();
    othersDone += r.get<std::int64_t>();
    othersNll += r.get<double>();
    TXL_CHECK(at >= 0 && at + std::int64_t(nll.size()) <= streams && squares.size() == nll.size(),
              "a share of streams outside the cut");
    std::copy(nll.begin(), nll.end(), streamNll.begin() + at);
    std::copy(squares.begin(), squares.end(), streamNllSquares.begin() + at);
    if (!perToken.empty()) std::copy(tokens.begin(), tokens.end(), perToken.begin() + at * (streamLength - 1));
  };
  auto lastSent = Clock::now();
  std::int64_t unsent = 0, doneHere = 0;
  double unsentNll = 0, nllHere = 0;
  so.progress = [&](std::int64_t done, std::int64_t total, double nll) {
    (void)total;
    unsent += done - doneHere;
    doneHere = done;
    unsentNll += nll - nllHere;
    nllHere = nll;
    if (rank == 0) {
      if (peers) peers->poll(std::chrono::milliseconds(0), handle);
      progress.show(doneHere + othersDone, streams * (streamLength - 1), nllHere + othersNll,
                    ranks > 1 ? " on " + std::to_string(ranks) + " ranks" : "");
    } else if (Clock::now() - lastSent > std::chrono::milliseconds(250)) {  // a heartbeat with the progress
      Writer w;
      w.put(std::int64_t(first));
      w.putAll(std::vector<double>{});
      w.putAll(std::vector<double>{});
      w.putAll(std::vector<float>{});
      w.put(unsent);
      w.put(unsentNll);
      procs.sendToRoot(kTagStreams, std::move(w.bytes));
      unsent = 0;
      unsentNll = 0;
      lastSent = Clock::now();
    }
  };
  const auto start = Clock::now();
  ScoreResult r = scoreTokens(session, ids, so, o.file);
  if (rank != 0) {
    Writer w;
    w.put(std::int64_t(first));
    w.putAll(r.streamNll);
    w.putAll(r.streamNllSquares);
    w.putAll(r.perToken);
    w.put(unsent);
    w.put(unsentNll);
    procs.sendToRoot(kTagStreams, std::move(w.bytes));
    procs.sendToRoot(kTagDone, {});
    return kExitOk;
  }
  std::copy(r.streamNll.begin(), r.streamNll.end(), streamNll.begin() + first);
  std::copy(r.streamNllSquares.begin(), r.streamNllSquares.end(), streamNllSquares.begin() + first);
  if (!perToken.empty()) std::copy(r.perToken.begin(), r.perToken.end(), perToken.begin());
  else perToken = std::move(r.perToken);
  while (peers && !peers->allDone()) peers->poll(std::chrono::milliseconds(100), handle);
  double nllSum = 0, nllSquares = 0;  // the streams in order, as scoreTokens sums them
  for (double s : streamNll) nllSum += s;
  for (double s : streamNllSquares) nllSquares += s;
  const std::int64_t scored = r.interrupted ? r.scored : streams * (streamLength - 1);
  const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
  progress.clear();
  if (r.dropped > 0)
    std::cerr << "txlc: note: --batch " << streams << " cuts " << ids.size() << " tokens into " << streams
              << " streams of " << streamLength << "; dropped the last " << r.dropped << " tokens" << std::endl;
  if (in.unknown > 0) {
    const double unk = unknownFraction(in);
    std::cerr << "txlc: " << (unk > 0.01 ? "warning" : "note") << ": " << in.unknown << " tokens of " << o.file
              << " (" << std::fixed << std::setprecision(2) << 100 * unk << std::defaultfloat
              << " %) are not in the vocabulary (scored as <unk>)"
              << (unk > 0.01 ? "; the perplexity of <unk> is not the text's" : "") << std::endl;
  }
  if (r.interrupted)
    std::cerr << "txlc: score: interrupted by " << (frontend::interruptSignal() == SIGINT ? "SIGINT" : "SIGTERM")
              << " after " << scored << " of " << streams * (streamLength - 1) << " tokens; the totals are partial"
              << std::endl;

  // The whole text's figures: every rank's streams, summed in stream order.
  ScoreResult total = r;
  total.batch = streams;
  total.nllSum = nllSum;
  total.nllSquares = nllSquares;
  total.scored = scored;
  nlohmann::json j = scoreReport(m, setting, in, total, seconds);
  j["ranks"] = ranks;
  const double perTok = j["nll_per_token"].get<double>(), bitsPerToken = j["bits_per_token"].get<double>();
  const bool characters = j.contains("bits_per_char");
  const int code = r.interrupted ? interruptedExit() : kExitOk;
  if (r.interrupted) j["tokens_total"] = streams * (streamLength - 1);
  // Every segment advances all streams together, so an interrupted run has
  // scored the same first positions of every stream: per token, its NLLs are
  // those positions', stream by stream, as a complete run's are.
  const std::int64_t scoredPerStream = scored / streams;
  if (o.perToken && r.interrupted) {
    std::vector<float> done;
    done.reserve(std::size_t(scored));
    for (std::int64_t b = 0; b < streams; ++b) {
      const auto from = perToken.begin() + b * (streamLength - 1);
      done.insert(done.end(), from, from + scoredPerStream);
    }
    perToken = std::move(done);
  }
  if (o.json) {
    if (o.perToken) j["per_token_nll"] = perToken;
    std::cout << j.dump(2) << std::endl;
    return code;
  }
  if (o.perToken) {
    // stream, position (of the predicted token in its stream), token, nll
    const frontend::Vocabulary* vocab = m.vocabulary && !o.ids ? &*m.vocabulary : nullptr;
    std::ostringstream out;
    out << std::setprecision(6);
    for (std::int64_t b = 0; b < streams; ++b)
      for (std::int64_t t = 1; t <= scoredPerStream; ++t) {
        std::int64_t id = ids[std::size_t(b * streamLength + t)];
        out << b << '\t' << t << '\t' << (vocab ? printable(vocab->symbol(id)) : std::to_string(id)) << '\t'
            << perToken[std::size_t(b * scoredPerStream + t - 1)] << '\n';
      }
    std::cout << out.str();
  }
  const double ppl = std::exp(perTok), pplErr = j["perplexity_stderr"].get<double>();
  if (r.interrupted) std::cout << "partial " << scored << " of " << streams * (streamLength - 1) << " tokens\n";
  std::cout << std::setprecision(10) << "tokens " << scored << "\nnll_sum " << nllSum << "\nnll_stderr "
            << j["nll_stderr"].get<double>() << "\nperplexity " << ppl << "\nbits_per_token " << bitsPerToken << "\n";
  if (characters) std::cout << "bits_per_char " << bitsPerToken << "\n";
  std::cout << "unk_tokens " << in.unknown << "\nunk_fraction " << std::setprecision(6) << unknownFraction(in) << "\n";
  // The estimate as llama-perplexity gives it: perplexity ± its standard error (delta method).
  const int digits = ppl >= 100 ? 2 : ppl >= 10 ? 3 : 4;
  std::cout << std::fixed << std::setprecision(digits) << "estimate" << (r.interrupted ? " (partial)" : "")
            << ": perplexity " << ppl << " \u00b1 " << pplErr << std::defaultfloat << "\n";
  std::cout << std::flush;
  return code;
}

// --- --documents --------------------------------------------------------------

// Where rank 0 puts the lines: stdout as they complete in order, or -o FILE.
// A regular FILE (or an absent one): the lines go to FILE.partial as they
// complete in order (what --resume continues from), and at the end FILE is
// written from it atomically and FILE.partial removed; a run that stops
// midway leaves FILE as it was (absent, or an earlier complete output) and
// FILE.partial. A character device or FIFO (/dev/null, a pipe): the lines
// go to it directly, with no .partial beside it. Anything else -o must not
// replace (frontend/atomic_file.h) is refused before the first document.
class Sink {
 public:
  Sink(const std::string& output, const std::string& kept) : output_(output) {
    if (output_.empty()) return;
    if (!frontend::checkOutputPath(output_) && ::access(output_.c_str(), F_OK) == 0) {
      direct_.emplace(output_, 0644);  // a device or FIFO: written in place
      direct_->write(kept.data(), kept.size());
      return;
    }
    partial_ = output_ + ".partial";
    frontend::checkOutputPath(partial_);
    // O_NOFOLLOW: a symlink planted at FILE.partial is refused, never followed;
    // a hard link is refused after the open, before anything is truncated.
    fd_ = ::open(partial_.c_str(), O_WRONLY | O_CREAT | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY | O_NONBLOCK, 0644);
    if (fd_ < 0) throw Error(partial_ + ": cannot create: " + std::strerror(errno));
    struct stat st {};
    if (::fstat(fd_, &st) != 0 || !S_ISREG(st.st_mode) || st.st_nlink > 1) {
      ::close(fd_);
      fd_ = -1;
      throw Error(partial_ + ": expected a regular file of its own to continue; found another kind or a hard link");
    }
    if (::ftruncate(fd_, 0) != 0) throw Error(partial_ + ": cannot truncate: " + std::strerror(errno));
    write(kept);
  }
  ~Sink() {
    if (fd_ >= 0) ::close(fd_);
  }
  void line(const std::string& l) {
    buffer_ += l;
    buffer_ += '\n';
  }
  void flush() {
    if (output_.empty()) {
      std::cout << buffer_ << std::flush;
    } else if (direct_) {
      direct_->write(buffer_.data(), buffer_.size());
    } else {
      write(buffer_);
    }
    buffer_.clear();
  }
  // FILE.partial, or empty for stdout, a device or a FIFO.
  const std::string& partialPath() const { return partial_; }
  // An interrupted run: the lines so far are out; FILE stays as it was and
  // FILE.partial holds them for --resume.
  void stop() {
    flush();
    if (direct_) direct_->commit();
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
  }
  void commit() {
    flush();
    if (output_.empty()) return;
    if (direct_) {
      direct_->commit();
      return;
    }
    ::close(fd_);
    fd_ = -1;
    const std::string all = readTextFile(partial_);
    frontend::AtomicFile f(output_, 0644);
    f.write(all.data(), all.size());
    f.commit();
    ::unlink(partial_.c_str());
  }

 private:
  void write(const std::string& bytes) {
    for (std::size_t done = 0; done < bytes.size();) {
      const ssize_t n = ::write(fd_, bytes.data() + done, bytes.size() - done);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) throw Error(partial_ + ": cannot write: " + std::strerror(errno));
      done += std::size_t(n);
    }
  }
  std::string output_, partial_;
  int fd_ = -1;
  std::optional<frontend::AtomicFile> direct_;
  std::string buffer_;
};

// --resume reads only regular files: a device or FIFO destination holds nothing to continue from.
bool isRegularFile(const std::string& path) {
  struct stat st {};
  return ::lstat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

int runDocuments(const Options& o, Processes& procs, Phase& phase) {
  const int rank = procs.rank(), ranks = procs.size();
  Model m = o.model.open();
  Setting setting = o.model.setting(m);
  const frontend::Vocabulary& vocab = requireVocabulary(m, "score --documents");
  const std::vector<Document> docs = readDocuments(o.documents, documentFormat(o.documentsFormat));
  std::vector<EncodedDocument> encoded;
  encoded.reserve(docs.size());
  for (const Document& d : docs) {
    encoded.push_back(encodeDocument(d, vocab, {o.maxTokens}));
    if (o.strict && !encoded.back().error.empty())
      throw Error(o.documents + ": document " + d.id.dump() + " (line " + std::to_string(d.line) +
                  "): " + encoded.back().error + " (--strict)");
  }
  // What an earlier run completed: FILE.partial of an interrupted run, else a complete FILE.
  std::size_t resumed = 0;
  std::string kept;
  if (o.resume) {
    const std::string partial = o.output + ".partial";
    const std::string from = isRegularFile(partial) ? partial : isRegularFile(o.output) ? o.output : "";
    if (!from.empty()) {
      const std::string content = readTextFile(from);
      frontend::forgetInputFile(from);  // this run's own output, continued and replaced
      std::size_t bytes = 0;
      resumed = completedPrefix(content, docs, from, &bytes);
      kept = content.substr(0, bytes);
    }
  }
  const backend::ModelInfo info = modelInfo(m.spec, setting);
  if (setting.batch > 1 && info.memLen > 0 && !info.padWarmup &&
      setting.initialMemory != frontend::InitialMemory::Zeros)
    throw Error("--documents with --batch " + std::to_string(setting.batch) +
                ": this model's streams cannot start afresh one by one (attn_type " + std::to_string(m.spec.attn_type) +
                " has no padded plans); use --batch 1");
  // The documents still to score, and this rank's share: every ranks-th.
  std::vector<std::size_t> todo, mine;
  for (std::size_t i = resumed; i < docs.size(); ++i)
    if (encoded[i].error.empty()) todo.push_back(i);
  for (std::size_t k = std::size_t(rank); k < todo.size(); k += std::size_t(ranks)) mine.push_back(todo[k]);
  std::vector<std::span<const std::int64_t>> tokens;
  for (std::size_t i : mine) tokens.push_back(encoded[i].ids);

  std::shared_ptr<backend::CompiledModel> compiled;
  if (!mine.empty()) compiled = compile(m, setting);
  std::optional<Sink> sink;
  phase.endSetup();  // every rank has read the earlier output before rank 0 rewrites it
  if (rank == 0) {
    sink.emplace(o.output, kept);
    if (!mine.empty()) noteReplanning(m, setting);
  }

  PackOptions po;
  po.qlen = setting.qlen;
  // SIGINT/SIGTERM (mpirun turns a Ctrl-C into SIGTERM to every rank) end
  // the scoring before the next segment: the workers send what they finished
  // and say so, rank 0 writes the lines that are complete in order and the
  // summary marked interrupted.
  frontend::catchInterrupts();
  const auto start = Clock::now();
  if (rank != 0) {  // a worker: results to rank 0 after every segment, a heartbeat at least every 250 ms
    Writer w;
    std::uint32_t pending = 0;
    std::int64_t predicted = 0;
    auto lastSent = Clock::now();
    const auto send = [&](bool force) {
      if (!force && pending == 0 && Clock::now() - lastSent < std::chrono::milliseconds(250)) return;
      Writer msg;
      msg.put(predicted);
      msg.put(pending);
      msg.bytes += w.bytes;
      procs.sendToRoot(kTagDocuments, std::move(msg.bytes));
      w.bytes.clear();
      pending = 0;
      predicted = 0;
      lastSent = Clock::now();
    };
    po.afterSegment = [&](std::int64_t n) {
      predicted += n;
      send(false);
    };
    po.stop = [] { return frontend::interruptSignal() != 0; };
    bool complete = true;
    if (!mine.empty()) {
      backend::Session session(compiled);
      complete = scoreDocuments(session, tokens, po, [&](std::size_t k, const DocumentScore& s) {
        w.put(std::uint64_t(mine[k]));
        w.put(s.tokens);
        w.put(s.nllSum);
        ++pending;
      });
    }
    send(true);
    const int signal = frontend::interruptSignal();
    procs.sendToRoot(kTagDone, complete ? std::string() : std::string(1, char(signal)));
    return complete ? kExitOk : 128 + signal;
  }

  // Rank 0: its own share, the others' results as they come, the lines in input order.
  std::vector<std::optional<DocumentScore>> scores(docs.size());
  std::size_t written = 0;        // documents whose line is out
  std::int64_t predictedAll = 0;  // tokens predicted in this run, all ranks
  std::size_t scoredAll = 0;      // documents scored in this run, all ranks
  Progress progress(o.showProgress());
  std::optional<Peers> peers;
  if (ranks > 1) peers.emplace(procs, o.rankTimeout);
  const auto writeReady = [&] {
    bool any = false;
    while (written < docs.size()) {
      if (written < resumed) {
        written = resumed;  // already in the kept lines
        continue;
      }
      const EncodedDocument& e = encoded[written];
      if (!e.error.empty()) sink->line(documentErrorLine(docs[written].id, e.error));
      else if (scores[written]) {
        if (o.strict && !std::isfinite(scores[written]->nllSum))
          throw Error(o.documents + ": document " + docs[written].id.dump() + " (line " +
                      std::to_string(docs[written].line) + "): its NLL is " +
                      nonFiniteReason(float(scores[written]->nllSum)) + " (--strict)");
        sink->line(documentLine(docs[written].id, *scores[written], e.unknown));
      }
      else break;
      ++written;
      any = true;
    }
    if (any) sink->flush();
  };
  const auto handle = [&](const Message& msg) {
    TXL_CHECK(msg.tag == kTagDocuments, "an unexpected message from rank " + std::to_string(msg.source));
    Reader r(msg.bytes);
    predictedAll += r.get<std::int64_t>();
    const auto count = r.get<std::uint32_t>();
    for (std::uint32_t k = 0; k < count; ++k) {
      const auto index = r.get<std::uint64_t>();
      TXL_CHECK(index < docs.size(), "a document index outside the corpus from rank " + std::to_string(msg.source));
      DocumentScore s;
      s.tokens = r.get<std::int64_t>();
      s.nllSum = r.get<double>();
      scores[index] = s;
      ++scoredAll;
    }
  };
  const auto showProgress = [&](bool force) {
    progress.show(std::to_string(scoredAll) + "/" + std::to_string(todo.size()) + " documents, " +
                      std::to_string(predictedAll) + " tokens" +
                      (ranks > 1 ? " on " + std::to_string(ranks) + " ranks" : ""),
                  predictedAll, force);
  };
  writeReady();  // error lines before the first scored document
  po.afterSegment = [&](std::int64_t n) {
    predictedAll += n;
    if (peers) peers->poll(std::chrono::milliseconds(0), handle);
    writeReady();
    showProgress(false);
  };
  // The signal that ends this run early: this rank's own, or one another rank stopped on.
  const auto interruptedBy = [&] {
    const int own = frontend::interruptSignal();
    return own != 0 ? own : peers ? peers->interruptedBy() : 0;
  };
  po.stop = [&] { return interruptedBy() != 0; };
  if (!mine.empty()) {
    backend::Session session(compiled);
    scoreDocuments(session, tokens, po, [&](std::size_t k, const DocumentScore& s) {
      scores[mine[k]] = s;
      ++scoredAll;
    });
  }
  // The other ranks, until each has stopped; once interrupted, for at most
  // 2 s more (mpirun kills its ranks soon after it forwards a signal).
  std::optional<Clock::time_point> giveUp;
  while (peers && !peers->allDone()) {
    if (!giveUp && interruptedBy() != 0) giveUp = Clock::now() + std::chrono::seconds(2);
    if (giveUp && Clock::now() > *giveUp) break;
    peers->poll(std::chrono::milliseconds(50), handle);
    writeReady();
    showProgress(false);
  }
  writeReady();
  const int signal = interruptedBy();
  const bool interrupted = written < docs.size();
  TXL_CHECK(!interrupted || signal != 0, "documents without a result after every rank finished");
  const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
  if (interrupted) sink->stop();
  else sink->commit();
  progress.clear();

  // The totals, over every document of the output in input order (the
  // resumed ones read back from their lines).
  std::int64_t tokensAll = 0, failed = 0;
  std::size_t scoredHere = 0;  // documents of the output this run scored
  double nllSum = 0;
  {
    std::size_t pos = 0;
    for (std::size_t i = 0; i < written; ++i) {
      if (i < resumed) {
        const std::size_t end = kept.find('\n', pos);
        const nlohmann::json j = nlohmann::json::parse(std::string_view(kept).substr(pos, end - pos));
        pos = end + 1;
        if (j.contains("error") || j.at("nll_sum").is_null()) ++failed;  // as documentLine writes them
        else {
          tokensAll += j.at("tokens").get<std::int64_t>();
          nllSum += j.at("nll_sum").get<double>();
        }
        continue;
      }
      if (!encoded[i].error.empty() || !std::isfinite(scores[i]->nllSum)) {  // an error line (documentLine)
        ++failed;
        continue;
      }
      ++scoredHere;
      tokensAll += scores[i]->tokens;
      nllSum += scores[i]->nllSum;
    }
  }
  const double perToken = tokensAll > 0 ? nllSum / double(tokensAll) : 0.0;
  nlohmann::json j = {{"file", o.documents},
                      {"documents", docs.size()},
                      {"scored", scoredHere},
                      {"resumed", resumed},
                      {"failed", failed},
                      {"tokens", tokensAll},
                      {"nll_sum", nllSum},
                      {"nll_per_token", perToken},
                      {"perplexity", std::exp(perToken)},
                      {"bits_per_token", perToken / std::log(2.0)},
                      {"seconds", seconds},
                      {"documents_per_second", seconds > 0 ? double(scoredAll) / seconds : 0.0},
                      {"tokens_per_second", seconds > 0 ? double(predictedAll) / seconds : 0.0},
                      {"ranks", ranks},
                      {"threads", o.model.threads},
                      {"batch", setting.batch},
                      {"qlen", setting.qlen},
                      {"mem_len", setting.memLen}};
  if (interrupted) {
    j["interrupted"] = true;
    j["written"] = written;  // the documents whose lines are out, in input order (resumed ones included)
    std::cerr << "txlc: score: interrupted by " << (signal == SIGINT ? "SIGINT" : "SIGTERM") << " after " << written
              << " of " << docs.size() << " documents; the totals are partial"
              << (sink->partialPath().empty() ? "" : "; " + sink->partialPath() + " holds their lines (--resume continues)")
              << std::endl;
  }
  if (!o.summary.empty()) {
    const std::string text = j.dump(2) + "\n";
    frontend::AtomicFile f(o.summary, 0644);
    f.write(text.data(), text.size());
    f.commit();
  } else {
    std::ostringstream line;
    line << "txlc: score: " << (interrupted ? std::to_string(written) + " of " : "") << docs.size() << " documents ("
         << failed << " with errors, " << resumed << " resumed), "
         << tokensAll << " tokens, nll_sum " << std::setprecision(10) << nllSum << ", " << std::setprecision(4)
         << perToken / std::log(2.0) << " bits/token; " << std::fixed << std::setprecision(1)
         << j["documents_per_second"].get<double>() << " documents/s, " << std::setprecision(0)
         << j["tokens_per_second"].get<double>() << " tokens/s on " << ranks << (ranks == 1 ? " rank" : " ranks");
    std::cerr << line.str() << std::endl;
  }
  if (!interrupted) return kExitOk;
  // A rank still at work (it missed the signal) would wait for rank 0 forever.
  if (peers && !peers->allDone()) procs.abort(128 + signal);
  return 128 + signal;
}

int run(const Options& o) {
  std::unique_ptr<Processes> procs = joinProcesses();
  Phase phase{*procs};
  const auto work = [&] {
    const std::string& input = o.documents.empty() ? o.file : o.documents;
    if (input == "-" && procs->size() > 1)
      throw Error("-: under mpirun stdin reaches rank 0 only, and every rank reads the input: give a file");
    return o.documents.empty() ? runText(o, *procs, phase) : runDocuments(o, *procs, phase);
  };
  if (procs->size() == 1) return work();  // errors as every command's (main)
  const int rank = procs->rank(), size = procs->size();
  try {
    const int code = work();
    procs->finish();
    return code;
  } catch (const OtherRankFailed& f) {
    procs->finish();
    return f.code;
  } catch (const RankLost& lost) {
    std::cerr << "txlc: error: " << rankName(lost.rank, size) << ": " << lost.reason << std::endl;
    procs->abort(kExitRankFailed);
  } catch (...) {
    const auto [code, line] = describeCurrent();
    if (!phase.setupDone) {  // every rank sets up alike: the lowest failing one speaks for all
      const Processes::Failure f = procs->firstFailure(code);
      if (f.rank == rank)
        std::cerr << "txlc: " << line << (rank > 0 ? " (" + rankName(rank, size) + ")" : "") << std::endl;
      procs->finish();
      return f.code;
    }
    const std::string where = rankName(rank, size) + ": ";
    std::cerr << "txlc: " << (line.rfind("error: ", 0) == 0 ? "error: " + where + line.substr(7) : where + line)
              << std::endl;
    procs->abort(code == kExitOk ? kExitInternal : code);
  }
  return kExitInternal;  // not reached: abort() ends the process
}

}  // namespace

void registerScore(CLI::App& app, Action& action) {
  auto o = std::make_shared<Options>();
  CLI::App* cmd = app.add_subcommand(
      "score", "score a text file (total NLL, perplexity, bits per token / character) or a corpus of documents");
  o->model.add(*cmd);
  CLI::Option* file = cmd->add_option("file", o->file, "the text to score (or token ids with --ids)");
  CLI::Option* ids = cmd->add_flag("--ids", o->ids, "FILE holds token ids (whitespace-separated integers), not text");
  CLI::Option* json = cmd->add_flag("--json", o->json, "machine-readable result on stdout");
  CLI::Option* perToken = cmd->add_flag("--per-token", o->perToken, "also the NLL of every predicted token");
  CLI::Option* documents = cmd->add_option(
      "--documents", o->documents,
      "score each document of FILE on its own (one per line, or JSON Lines with \"text\" and \"id\"): one JSON line "
      "per document, in order");
  std::vector<CLI::Option*> docOnly;
  docOnly.push_back(cmd->add_option("-o,--output", o->output,
                                    "--documents: write the lines to FILE (atomically; FILE.partial while running)")
                        ->check(nonEmptyPath()));
  docOnly.push_back(
      cmd->add_option("--summary", o->summary, "--documents: the summary as JSON to FILE instead of a line on stderr")
          ->check(nonEmptyPath()));
  docOnly.push_back(
      cmd->add_flag("--resume", o->resume, "--documents: keep the documents an interrupted run (-o FILE) completed"));
  docOnly.push_back(cmd->add_flag("--strict", o->strict,
                                  "--documents: a document that cannot be scored is an error, not an error line"));
  docOnly.push_back(
      cmd->add_option("--documents-format", o->documentsFormat, "--documents: auto (default), lines or jsonl"));
  docOnly.push_back(
      cmd->add_option("--max-tokens", o->maxTokens, "--documents: longer documents are error lines (default 1048576)")
          ->check(positiveInt()));
  CLI::Option* progressOn = cmd->add_flag(
      "--progress", o->progress, "a running estimate on stderr (tokens, perplexity, tokens/s, ETA); default on a terminal");
  cmd->add_flag("--no-progress", o->noProgress, "no running estimate, even on a terminal")->excludes(progressOn);
  cmd->add_option("--max-unk-fraction", o->maxUnkFraction,
                  "refuse a text whose share of <unk> tokens is above F (default 0.1)")
      ->check(realIn(0, 1, false, "a fraction in [0, 1]"));
  cmd->add_option("--rank-timeout", o->rankTimeout,
                  "under mpirun: rank 0 gives up on a rank silent for this many seconds (default 120)")
      ->check(realIn(0, 1e9, true, "a number of seconds above 0"));
  cmd->callback([o, &action, file, ids, json, perToken, documents, docOnly] {
    if (documents->count() && file->count()) throw CLI::ValidationError("--documents", "excludes FILE");
    if (!documents->count() && !file->count()) throw CLI::RequiredError("file");
    for (CLI::Option* opt : {ids, json, perToken})
      if (documents->count() && opt->count())
        throw CLI::ValidationError(opt->get_name(), "excludes --documents (its output is one JSON line per document)");
    for (CLI::Option* opt : docOnly)
      if (!documents->count() && opt->count()) throw CLI::ValidationError(opt->get_name(), "needs --documents");
    if (o->resume && (o->output.empty() || o->output == "-")) throw CLI::ValidationError("--resume", "needs -o FILE");
    if (o->output == "-") o->output.clear();  // the lines to stdout, as without -o
    if (!o->summary.empty() && !o->output.empty()) {
      namespace fs = std::filesystem;
      std::error_code ec;
      const auto a = fs::weakly_canonical(o->summary, ec);
      if (a == fs::weakly_canonical(o->output, ec) || a == fs::weakly_canonical(o->output + ".partial", ec))
        throw CLI::ValidationError("--summary", "is the file of the lines (-o); give another file");
    }
    if (o->documentsFormat != "auto" && o->documentsFormat != "lines" && o->documentsFormat != "jsonl")
      throw CLI::ValidationError("--documents-format",
                                 "expected auto, lines or jsonl, got '" + o->documentsFormat + "'");
    action = [o] { return run(*o); };
  });
}

}  // namespace txl::tools
