// driver/text_source.h - reading the text and token-id inputs of commands.
//
// Every problem is one txl::Error line naming the file and the place:
//   ids.txt: line 2 column 5: expected a token id in [0, 73), got "-1"
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace txl::driver {

// The whole file; "-" reads stdin.
std::string readTextFile(const std::string& path);

// Whitespace-separated integer ids, each in [0, nToken).
std::vector<std::int64_t> parseTokenIds(std::string_view text, const std::string& source, std::int64_t nToken);
std::vector<std::int64_t> readTokenIds(const std::string& path, std::int64_t nToken);

// Streams of ids: one stream per line (or separated by ';'); every stream the
// same length. Returns streams[b][t].
std::vector<std::vector<std::int64_t>> parseTokenStreams(std::string_view text, const std::string& source,
                                                         std::int64_t nToken);

}  // namespace txl::driver
