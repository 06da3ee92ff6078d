// tests/frontend/safetensors_test.cpp - safetensors reader checks, conversions, and the atomic writer.
#include <catch2/catch.hpp>

#include <unistd.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>

#include "frontend/safetensors.h"
#include "ir/check.h"

using namespace txl::frontend;
using txl::ir::DType;
using txl::ir::Tensor;

namespace {

// A safetensors image: length prefix, `header` verbatim, `data` bytes (0, 1, 2, ...).
std::vector<std::byte> image(const std::string& header, std::size_t data, std::uint64_t length = ~0ULL) {
  std::vector<std::byte> out;
  std::uint64_t n = length == ~0ULL ? header.size() : length;
  for (int i = 0; i < 8; ++i) out.push_back(static_cast<std::byte>((n >> (8 * i)) & 0xff));
  for (char c : header) out.push_back(static_cast<std::byte>(c));
  for (std::size_t i = 0; i < data; ++i) out.push_back(static_cast<std::byte>(i & 0xff));
  return out;
}

std::string errorOf(std::vector<std::byte> bytes) {
  try {
    SafetensorsFile::fromBytes(std::move(bytes), "model.safetensors");
  } catch (const txl::Error& e) {
    return e.what();
  }
  return "(no error)";
}

Tensor f32(std::vector<std::int64_t> shape, std::vector<float> values) {
  Tensor t = Tensor::zeros({DType::F32, std::move(shape)});
  std::memcpy(t.raw(), values.data(), values.size() * sizeof(float));
  return t;
}

std::string tempPath(const std::string& name) {
  return (std::filesystem::temp_directory_path() / ("txl_frontend_" + std::to_string(::getpid()) + "_" + name))
      .string();
}

}  // namespace

TEST_CASE("safetensors corruption: each gives its one-line message", "[safetensors][errors]") {
  struct Row {
    std::vector<std::byte> bytes;
    const char* message;
  };
  const std::string ok = R"({"x":{"dtype":"F32","shape":[2,3],"data_offsets":[0,24]}})";
  std::vector<Row> rows = {
      {{std::byte{1}, std::byte{0}}, "model.safetensors: file of 2 bytes is too short for the 8-byte header length"},
      {image(ok, 24, 1000),
       "model.safetensors: header length 1000 runs past the end of the file (89 bytes, 81 after the length)"},
      {image(ok, 24, ~1ULL),
       "model.safetensors: header length 18446744073709551614 runs past the end of the file (89 bytes, 81 after "
       "the length)"},
      {image(ok, 10), "model.safetensors: tensor \"x\": data_offsets [0, 24] run past the data section (10 bytes)"},
      {image("{\"x\": 1,", 0),
       "model.safetensors: header: line 1 column 9: syntax error while parsing object key - unexpected end of "
       "input; expected string literal"},
      {image("[1, 2]", 0), "model.safetensors: header: expected a JSON object, got [1,2]"},
      {image(R"({"x":{"dtype":"F33","shape":[2,3],"data_offsets":[0,24]}})", 24),
       "model.safetensors: tensor \"x\": unknown dtype \"F33\" (expected F64, F32, F16, BF16, F8_E4M3, F8_E5M2, "
       "I64, I32, I16, I8, U64, U32, U16, U8 or BOOL)"},
      {image(R"({"x":{"dtype":"F32","shape":[2,3],"data_offsets":[0,12]}})", 24),
       "model.safetensors: tensor \"x\": data_offsets [0, 12] hold 12 bytes, shape [2,3] of F32 needs 24"},
      {image(R"({"x":{"dtype":"F32","shape":[2,-3],"data_offsets":[0,24]}})", 24),
       "model.safetensors: tensor \"x\": shape: expected an array of at most 16 non-negative integers, got [2,-3]"},
      {image(R"({"x":{"dtype":"F32","shape":[4611686018427387904,4611686018427387904],"data_offsets":[0,0]}})", 0),
       "model.safetensors: tensor \"x\": shape [4611686018427387904,4611686018427387904] of F32 overflows 64 bits"},
      {image(R"({"x":{"dtype":"F32","shape":[2,3],"data_offsets":[24,0]}})", 24),
       "model.safetensors: tensor \"x\": data_offsets: expected [begin, end] with 0 <= begin <= end, got [24,0]"},
      {image(R"({"x":{"dtype":"F32","shape":[2,3]}})", 24),
       "model.safetensors: tensor \"x\": missing \"data_offsets\""},
      {image(R"({"x":[1]})", 24),
       "model.safetensors: tensor \"x\": expected an object with dtype, shape and data_offsets, got [1]"},
      {image(R"({"a":{"dtype":"F32","shape":[4],"data_offsets":[0,16]},)"
             R"("b":{"dtype":"F32","shape":[4],"data_offsets":[8,24]}})",
             24),
       "model.safetensors: tensors \"a\" [0, 16] and \"b\" [8, 24] overlap"},
      {image(R"({"a":{"dtype":"F32","shape":[6],"data_offsets":[0,24]},)"
             R"("b":{"dtype":"F32","shape":[1],"data_offsets":[8,12]}})",
             24),
       "model.safetensors: tensors \"a\" [0, 24] and \"b\" [8, 12] overlap"},
      {image(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
             R"("a":{"dtype":"F32","shape":[2],"data_offsets":[8,16]}})",
             16),
       "model.safetensors: header: /a: duplicate key"},
      {image(R"({"__metadata__":{"k":1}})", 0), "model.safetensors: __metadata__: \"k\": expected a string, got 1"},
  };
  for (std::size_t i = 0; i < rows.size(); ++i) {
    INFO("row " << i);
    CHECK(errorOf(rows[i].bytes) == rows[i].message);
  }
}

TEST_CASE("safetensors: valid oddities are accepted", "[safetensors]") {
  // Empty tensors, scalars, padding, metadata, zero-length ranges at one offset.
  auto f = SafetensorsFile::fromBytes(
      image(R"({"__metadata__":{"format":"pt"},"e":{"dtype":"F32","shape":[0,3],"data_offsets":[4,4]},)"
            R"("f":{"dtype":"F32","shape":[0],"data_offsets":[4,4]},)"
            R"("s":{"dtype":"F32","shape":[],"data_offsets":[0,4]}}    )",
            4),
      "m");
  CHECK(f.names() == std::vector<std::string>{"e", "f", "s"});
  CHECK(f.metadata().at("format") == "pt");
  CHECK(f.toF32("e").numel() == 0);
  CHECK(f.toF32("s").shape().empty());
  CHECK_THROWS_WITH(f.info("nope"), "m: no tensor \"nope\"");
}

TEST_CASE("safetensors: dtype conversions", "[safetensors]") {
  // F16 1.0, -2.0, 65504, smallest subnormal; BF16 1.5; F64 0.25; I32 -7.
  std::vector<std::uint8_t> data = {0x00, 0x3c, 0x00, 0xc0, 0xff, 0x7b, 0x01, 0x00,  // F16 x4
                                    0xc0, 0x3f,                                      // BF16
                                    0,    0,    0,    0,    0,    0,    0xd0, 0x3f,  // F64 0.25
                                    0xf9, 0xff, 0xff, 0xff};                         // I32 -7
  std::string header = R"({"h":{"dtype":"F16","shape":[4],"data_offsets":[0,8]},)"
                       R"("b":{"dtype":"BF16","shape":[1],"data_offsets":[8,10]},)"
                       R"("d":{"dtype":"F64","shape":[1],"data_offsets":[10,18]},)"
                       R"("i":{"dtype":"I32","shape":[1],"data_offsets":[18,22]}})";
  auto bytes = image(header, 0);
  for (auto b : data) bytes.push_back(static_cast<std::byte>(b));
  auto f = SafetensorsFile::fromBytes(bytes, "m");
  Tensor h = f.toF32("h");
  CHECK(h.data<float>()[0] == 1.0f);
  CHECK(h.data<float>()[1] == -2.0f);
  CHECK(h.data<float>()[2] == 65504.0f);
  CHECK(h.data<float>()[3] == std::ldexp(1.0f, -24));
  CHECK(f.toF32("b").data<float>()[0] == 1.5f);
  CHECK(f.toF32("d").data<float>()[0] == 0.25f);  // unaligned F64 source: read via memcpy
  CHECK(f.toI64("i").data<std::int64_t>()[0] == -7);
  CHECK_THROWS_WITH(f.toF32("i"),
                    "m: tensor \"i\": dtype I32 cannot be used as f32 weights (expected F32, F16, BF16 or F64)");
  CHECK_THROWS_WITH(f.toI64("h"),
                    "m: tensor \"h\": dtype F16 cannot be read as integers (expected I64, I32, I16, "
                    "I8, U64, U32, U16 or U8)");
}

TEST_CASE("safetensors: F32 aliases the buffer when aligned, copies when not", "[safetensors]") {
  // Header of 16 bytes: data starts at offset 24 of the image (aligned).
  std::string aligned = R"({"x":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}})";
  while ((8 + aligned.size()) % 8) aligned += ' ';
  auto f = SafetensorsFile::fromBytes(image(aligned, 4), "m");
  CHECK(f.toF32("x").raw() == static_cast<const void*>(f.bytes("x")));
  std::string odd = R"({"x":{"dtype":"F32","shape":[1],"data_offsets":[1,5]}})";
  while ((8 + odd.size()) % 8) odd += ' ';
  auto g = SafetensorsFile::fromBytes(image(odd, 5), "m");
  Tensor t = g.toF32("x");
  CHECK(t.raw() != static_cast<const void*>(g.bytes("x")));
  float want;
  std::memcpy(&want, g.bytes("x"), 4);
  CHECK(std::memcmp(t.raw(), &want, 4) == 0);
}

TEST_CASE("safetensors: NaN and Inf are refused or warned about", "[safetensors][errors]") {
  const float nan = std::numeric_limits<float>::quiet_NaN(), inf = std::numeric_limits<float>::infinity();
  auto bytes = serializeSafetensors({{"w", f32({4}, {1, nan, inf, 2})}, {"ok", f32({1}, {3})}});
  auto f = SafetensorsFile::fromBytes(bytes, "model.safetensors");
  CHECK_THROWS_WITH(f.toF32("w"),
                    "model.safetensors: tensor \"w\": element 1 is NaN (2 non-finite values); "
                    "non-finite weights are refused");
  std::vector<std::string> warnings;
  ConvertOptions warn{NonFinitePolicy::Warn, [&](const std::string& m) { warnings.push_back(m); }};
  Tensor t = f.toF32("w", warn);
  CHECK(std::isnan(t.data<float>()[1]));
  REQUIRE(warnings.size() == 1);
  CHECK(warnings[0] == "model.safetensors: tensor \"w\": 2 non-finite values (first: element 1 is NaN)");
  CHECK_NOTHROW(f.toF32("w", {NonFinitePolicy::Allow, nullptr}));
  CHECK(f.toF32("ok").data<float>()[0] == 3.0f);

  // An F64 value beyond f32 range.
  std::string header = R"({"d":{"dtype":"F64","shape":[1],"data_offsets":[0,8]}})";
  auto big = image(header, 0);
  double v = 1e300;
  const auto* p = reinterpret_cast<const std::byte*>(&v);
  big.insert(big.end(), p, p + 8);
  CHECK_THROWS_WITH(SafetensorsFile::fromBytes(big, "m").toF32("d"),
                    "m: tensor \"d\": element 0 is out of f32 range (1 non-finite values); non-finite weights are "
                    "refused");
}

TEST_CASE("safetensors writer: round trip, metadata, atomic replace", "[safetensors]") {
  const std::string path = tempPath("round.safetensors");
  Tensor a = f32({2, 3}, {1, 2, 3, 4, 5, 6});
  Tensor ids = Tensor::zeros({DType::I64, {3}});
  ids.data<std::int64_t>()[2] = -5;
  Tensor scalar = f32({}, {7});
  writeSafetensors(path, {{"a", a}, {"ids", ids}, {"s", scalar}}, {{"format", "txl"}});
  {
    auto f = SafetensorsFile::open(path);
    CHECK(f.names() == std::vector<std::string>{"a", "ids", "s"});
    CHECK(f.info("a").shape == txl::ir::Shape{2, 3});
    CHECK(f.info("ids").dtype == StDType::I64);
    CHECK(std::memcmp(f.toF32("a").raw(), a.raw(), 24) == 0);
    CHECK(f.toI64("ids").data<std::int64_t>()[2] == -5);
    CHECK(f.toF32("s").data<float>()[0] == 7.0f);
    CHECK(f.metadata().at("format") == "txl");
    // Data begins 8-aligned, so F32 tensors alias the mapping.
    CHECK(f.toF32("a").raw() == static_cast<const void*>(f.bytes("a")));
  }
  // Same bytes as the in-memory serializer.
  std::ifstream in(path, std::ios::binary);
  std::vector<char> onDisk((std::istreambuf_iterator<char>(in)), {});
  auto mem = serializeSafetensors({{"a", a}, {"ids", ids}, {"s", scalar}}, {{"format", "txl"}});
  CHECK(onDisk.size() == mem.size());
  CHECK(std::memcmp(onDisk.data(), mem.data(), mem.size()) == 0);

  // Replacing keeps a valid file; no temporary is left behind.
  writeSafetensors(path, {{"b", f32({1}, {9})}});
  CHECK(SafetensorsFile::open(path).names() == std::vector<std::string>{"b"});
  CHECK_FALSE(std::filesystem::exists(path + ".tmp." + std::to_string(::getpid())));

  // Duplicate names are refused before anything is written.
  CHECK_THROWS_WITH(writeSafetensors(path, {{"b", a}, {"b", a}}), "safetensors writer: duplicate tensor name \"b\"");
  CHECK(SafetensorsFile::open(path).names() == std::vector<std::string>{"b"});
  std::filesystem::remove(path);

  // An unwritable destination leaves nothing behind and names the path.
  const std::string missingDir = tempPath("no_such_dir") + "/x.safetensors";
  CHECK_THROWS_WITH(writeSafetensors(missingDir, {{"a", a}}),
                    Catch::Matchers::StartsWith(missingDir + ": cannot create a temporary file beside it: "));
}

TEST_CASE("safetensors open: file errors", "[safetensors][errors]") {
  CHECK_THROWS_WITH(SafetensorsFile::open("/nonexistent/w.safetensors"),
                    "/nonexistent/w.safetensors: cannot open: No such file or directory");
  const std::string dir = std::filesystem::temp_directory_path().string();
  CHECK_THROWS_WITH(SafetensorsFile::open(dir), dir + ": is a directory, expected a safetensors file (a regular file)");
  const std::string truncated = tempPath("trunc.safetensors");
  auto bytes = serializeSafetensors({{"a", f32({4}, {1, 2, 3, 4})}});
  std::ofstream(truncated, std::ios::binary)
      .write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size() - 4));
  CHECK_THROWS_WITH(SafetensorsFile::open(truncated), truncated +
                                                          ": tensor \"a\": data_offsets [0, 16] run past "
                                                          "the data section (12 bytes)");
  std::ofstream(truncated, std::ios::binary).write("abc", 3);
  CHECK_THROWS_WITH(SafetensorsFile::open(truncated),
                    truncated + ": file of 3 bytes is too short for the 8-byte header length");
  std::filesystem::remove(truncated);
}

TEST_CASE("safetensors: every conformance and model file opens", "[safetensors]") {
  const std::filesystem::path root = TXL_TEST_DATA_DIR;
  int opened = 0;
  for (const auto& entry : std::filesystem::directory_iterator(root / "conformance")) {
    if (!entry.is_directory()) continue;
    for (const char* name : {"weights.safetensors", "io.safetensors"}) {
      auto f = SafetensorsFile::open((entry.path() / name).string());
      CHECK_FALSE(f.names().empty());
      ++opened;
    }
  }
  CHECK(opened == 20);
  auto io = SafetensorsFile::open((root / "conformance" / "tiny_base" / "io.safetensors").string());
  CHECK(io.info("seg0.input").dtype == StDType::I64);
  Tensor input = io.toI64("seg0.input");
  CHECK(input.dtype() == DType::I64);
  for (std::int64_t i = 0; i < input.numel(); ++i)
    CHECK((input.data<std::int64_t>()[i] >= 0 && input.data<std::int64_t>()[i] < 97));
}

TEST_CASE("safetensors: random corruptions end in txl::Error or a valid file, never a crash", "[safetensors][fuzz]") {
  const auto good = serializeSafetensors({{"a", f32({2, 3}, {1, 2, 3, 4, 5, 6})}, {"b", f32({1}, {7})}}, {{"k", "v"}});
  std::uint64_t state = 12345;
  auto next = [&] {
    state = state * 6364136223846793005ULL + 1442695040888963407ULL;
    return state >> 33;
  };
  int accepted = 0, refused = 0;
  for (int round = 0; round < 3000; ++round) {
    auto bytes = good;
    const int edits = 1 + static_cast<int>(next() % 4);
    for (int e = 0; e < edits; ++e) {
      switch (next() % 3) {
        case 0:
          bytes[next() % bytes.size()] = static_cast<std::byte>(next() & 0xff);
          break;  // flip a byte
        case 1:
          bytes.resize(next() % (bytes.size() + 1));
          break;  // truncate
        case 2:
          bytes[next() % 8] = static_cast<std::byte>(next() & 0xff);
          break;  // length field
      }
      if (bytes.empty()) break;
    }
    try {
      auto f = SafetensorsFile::fromBytes(bytes, "m");
      for (const auto& name : f.names()) {
        try {
          f.toF32(name);
        } catch (const txl::Error&) {
        }
      }
      ++accepted;
    } catch (const txl::Error& e) {
      CHECK(std::string(e.what()).find('\n') == std::string::npos);
      ++refused;
    }
  }
  CHECK(accepted > 0);
  CHECK(refused > 0);
}
