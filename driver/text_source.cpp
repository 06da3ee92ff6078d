// driver/text_source.cpp - text files and token ids.
#include "driver/text_source.h"

#include <cerrno>
#include <charconv>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>

#include "frontend/input_file.h"
#include "ir/check.h"

namespace txl::driver {

std::string readTextFile(const std::string& path) {
  // Standard input may stream (a pipe); a named file must be a regular one.
  return frontend::readInputFile(path, frontend::kMaxTextBytes, "a text file", /*allowStdin=*/true);
}

namespace {

bool isBlank(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\v' || c == '\f'; }

// Parses the ids of one line; `line` is 1-based for messages.
void parseLine(std::string_view text, std::size_t line, const std::string& source, std::int64_t nToken,
               std::vector<std::int64_t>& out) {
  for (std::size_t b = 0; b < text.size();) {
    while (b < text.size() && isBlank(text[b])) ++b;
    std::size_t e = b;
    while (e < text.size() && !isBlank(text[e])) ++e;
    if (e == b) break;
    std::string_view word = text.substr(b, e - b);
    std::int64_t v = 0;
    auto [p, ec] = std::from_chars(word.data(), word.data() + word.size(), v);
    if (ec != std::errc() || p != word.data() + word.size() || v < 0 || v >= nToken)
      throw Error(source + ": line " + std::to_string(line) + " column " + std::to_string(b + 1) +
                  ": expected a token id in [0, " + std::to_string(nToken) + "), got " + quote(word));
    out.push_back(v);
    b = e;
  }
}

}  // namespace

std::vector<std::int64_t> parseTokenIds(std::string_view text, const std::string& source, std::int64_t nToken) {
  std::vector<std::int64_t> ids;
  std::size_t line = 1;
  for (std::size_t pos = 0; pos <= text.size(); ++line) {
    std::size_t end = text.find('\n', pos);
    if (end == std::string_view::npos) end = text.size();
    parseLine(text.substr(pos, end - pos), line, source, nToken, ids);
    pos = end + 1;
  }
  return ids;
}

std::vector<std::int64_t> readTokenIds(const std::string& path, std::int64_t nToken) {
  const std::string text = readTextFile(path);
  return frontend::parsingFile(path, "token ids", [&] { return parseTokenIds(text, path, nToken); });
}

std::vector<std::vector<std::int64_t>> parseTokenStreams(std::string_view text, const std::string& source,
                                                         std::int64_t nToken) {
  std::vector<std::vector<std::int64_t>> streams;
  std::size_t line = 1;
  for (std::size_t pos = 0; pos <= text.size();) {
    std::size_t end = text.find_first_of(";\n", pos);
    if (end == std::string_view::npos) end = text.size();
    std::vector<std::int64_t> ids;
    parseLine(text.substr(pos, end - pos), line, source, nToken, ids);
    if (!ids.empty()) {
      if (!streams.empty() && ids.size() != streams.front().size())
        throw Error(source + ": line " + std::to_string(line) + ": stream " + std::to_string(streams.size()) + " has " +
                    std::to_string(ids.size()) + " ids, expected " + std::to_string(streams.front().size()) +
                    " like stream 0");
      streams.push_back(std::move(ids));
    }
    if (end < text.size() && text[end] == '\n') ++line;
    pos = end + 1;
  }
  if (streams.empty()) throw Error(source + ": expected token ids, got none");
  return streams;
}

}  // namespace txl::driver
