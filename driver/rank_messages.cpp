// driver/rank_messages.cpp - the codec of a split score job's messages: plain fields appended and read back.
#include "driver/rank_messages.h"

#include <cstring>

#include "ir/check.h"

namespace txl::driver {

namespace {

class Writer {
 public:
  template <typename T>
  void put(T v) {
    bytes.append(reinterpret_cast<const char*>(&v), sizeof v);
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
    TXL_CHECK(n <= (b_.size() - pos_) / sizeof(T), "a message from another rank is truncated");  // n * size may wrap
    std::vector<T> v(n);
    if (n > 0) std::memcpy(v.data(), b_.data() + pos_, n * sizeof(T));  // an empty vector's data() may be null
    pos_ += n * sizeof(T);
    return v;
  }

 private:
  const std::string& b_;
  std::size_t pos_ = 0;
};

}  // namespace

std::string encodeStreamShare(const StreamShare& s) {
  Writer w;
  w.put(s.first);
  w.putAll(s.nll);
  w.putAll(s.nllSquares);
  w.putAll(s.perToken);
  w.put(s.predicted);
  w.put(s.predictedNll);
  return std::move(w.bytes);
}

StreamShare decodeStreamShare(const std::string& bytes) {
  Reader r(bytes);
  StreamShare s;
  s.first = r.get<std::int64_t>();
  s.nll = r.getAll<double>();
  s.nllSquares = r.getAll<double>();
  s.perToken = r.getAll<float>();
  s.predicted = r.get<std::int64_t>();
  s.predictedNll = r.get<double>();
  return s;
}

std::string encodeDocumentBatch(const DocumentBatch& b) {
  Writer w;
  w.put(b.predicted);
  w.put(std::uint32_t(b.scores.size()));
  for (const auto& [index, s] : b.scores) {
    w.put(index);
    w.put(s.tokens);
    w.put(s.nllSum);
  }
  return std::move(w.bytes);
}

DocumentBatch decodeDocumentBatch(const std::string& bytes) {
  Reader r(bytes);
  DocumentBatch b;
  b.predicted = r.get<std::int64_t>();
  const auto count = r.get<std::uint32_t>();
  for (std::uint32_t k = 0; k < count; ++k) {
    const auto index = r.get<std::uint64_t>();
    DocumentScore s;
    s.tokens = r.get<std::int64_t>();
    s.nllSum = r.get<double>();
    b.scores.emplace_back(index, s);
  }
  return b;
}

std::string encodeDone(int signal) { return signal == 0 ? std::string() : std::string(1, char(signal)); }

int decodeDone(const std::string& bytes) { return bytes.empty() ? 0 : int(static_cast<unsigned char>(bytes[0])); }

}  // namespace txl::driver
