// driver/rank_messages.h - the messages a split score job's ranks send to rank 0, and their codec.
//
// Every rank other than 0 sends rank 0 its results and its progress
// (driver/distributed.h carries the bytes). A message is plain fields in the
// sender's byte order (every rank of a run is the same build on the same kind
// of machine); a vector is its length (uint64) then its elements. Decoding a
// truncated message is an internal error: ranks only ever read their own
// build's messages.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "driver/documents.h"

namespace txl::driver {

// Message tags between ranks.
inline constexpr int kTagDocuments = 1;  // finished documents and the tokens predicted since the last message
inline constexpr int kTagDone = 2;       // the sender stopped: its share complete, or (a signal number) interrupted
inline constexpr int kTagStreams = 3;    // a share of the streams of one text: its NLLs

// kTagStreams: a rank's streams [first, first + nll.size()) of one text, or
// (empty vectors) a heartbeat carrying only the progress since the last message.
struct StreamShare {
  std::int64_t first = 0;
  std::vector<double> nll, nllSquares;  // per stream, as ScoreResult::streamNll / streamNllSquares
  std::vector<float> perToken;          // stream-major, as ScoreResult::perToken
  std::int64_t predicted = 0;           // tokens predicted since the last message
  double predictedNll = 0;              // the sum of their NLLs
};
std::string encodeStreamShare(const StreamShare& s);
StreamShare decodeStreamShare(const std::string& bytes);

// kTagDocuments: the documents (indices into the corpus) finished since the
// last message and the tokens predicted since then.
struct DocumentBatch {
  std::int64_t predicted = 0;
  std::vector<std::pair<std::uint64_t, DocumentScore>> scores;
};
std::string encodeDocumentBatch(const DocumentBatch& b);
DocumentBatch decodeDocumentBatch(const std::string& bytes);

// kTagDone: empty when the sender's share is complete, else the signal that stopped it.
std::string encodeDone(int signal);
int decodeDone(const std::string& bytes);

}  // namespace txl::driver
