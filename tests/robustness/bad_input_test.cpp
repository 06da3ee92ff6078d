// tests/robustness/bad_input_test.cpp - every bad input of docs/ERRORS.md through the real txlc.
//
// Each row names the files it needs (written into a fresh directory), the
// command line, the exit code and the one line txlc must print on stderr.
// "…" in a message stands for text that depends on the machine or on a hash
// (a RAM size, a model id); everything else must match exactly, and the
// line must be the only one on stderr. Every row's message must also appear
// in docs/ERRORS.md, so the table there cannot drift from what txlc says.
#include <catch2/catch.hpp>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdlib>
#include <iostream>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <limits>
#include <nlohmann/json.hpp>
#include <regex>
#include <sstream>

#include "frontend/safetensors.h"
#include "tests/robustness/run_process.h"
#include "driver/content_hash.h"
#include "ir/check.h"
#include "tools/exit_codes.h"

namespace fs = std::filesystem;
using txl::test::runProcess;

namespace {

const std::string kTxlc = TXLC_PATH;
const std::string kTests = TXL_TEST_DATA_DIR;
const std::string kSource = TXL_SOURCE_DIR;
constexpr double kTimeout = 300;  // seconds; a row that takes longer hangs

std::string readFile(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::ostringstream s;
  s << f.rdbuf();
  return s.str();
}

void writeFile(const std::string& path, const std::string& bytes) {
  std::ofstream f(path, std::ios::binary);
  f.write(bytes.data(), std::streamsize(bytes.size()));
  REQUIRE(f.good());
}

nlohmann::json tinySpec() {
  return nlohmann::json::parse(readFile(kTests + "/conformance/tiny_base/case.json"))["config"];
}

std::string specWith(const std::function<void(nlohmann::json&)>& edit) {
  nlohmann::json j = tinySpec();
  edit(j);
  return j.dump();
}

// A safetensors image with a hand-written header (padded to 8 bytes) and data.
std::string safetensors(std::string header, std::size_t dataBytes) {
  while (header.size() % 8) header += ' ';
  std::string out(8, '\0');
  for (int i = 0; i < 8; ++i) out[std::size_t(i)] = char((std::uint64_t(header.size()) >> (8 * i)) & 0xff);
  return out + header + std::string(dataBytes, '\0');
}

// The tiny model's weights with one element of one tensor replaced by `value`.
std::string weightsWith(const std::string& tensor, std::int64_t element, float value) {
  auto file = txl::frontend::SafetensorsFile::open(kTests + "/conformance/tiny_base/weights.safetensors");
  std::vector<std::pair<std::string, txl::ir::Tensor>> tensors;
  for (const auto& name : file.names()) {
    txl::ir::Tensor t = file.toF32(name).clone();
    if (name == tensor) t.data<float>()[element] = value;
    tensors.emplace_back(name, std::move(t));
  }
  auto bytes = txl::frontend::serializeSafetensors(tensors);
  return std::string(reinterpret_cast<const char*>(bytes.data()), bytes.size());
}

// A word vocabulary of the tiny model's 97 symbols: w0 … w94, <eos>, <unk>.
std::string words97() {
  std::string v;
  for (int i = 0; i < 95; ++i) v.append("w").append(std::to_string(i)).append("\n");
  return v + "<eos>\n<unk>\n";
}

// A crafted artifact: the manifest of `art` changed by `edit`, the data section
// moved after it, the header lengths and the checksum fixed up (the layout of
// driver/artifact.h), so that reading reaches the manifest checks.
std::string artifactWithManifest(const std::string& art, const std::function<void(nlohmann::json&)>& edit) {
  auto get64 = [&](std::size_t at) {
    std::uint64_t v = 0;
    for (int i = 7; i >= 0; --i) v = (v << 8) | std::uint8_t(art[at + std::size_t(i)]);
    return v;
  };
  auto put64 = [](std::string& s, std::size_t at, std::uint64_t v) {
    for (int i = 0; i < 8; ++i) s[at + std::size_t(i)] = char((v >> (8 * i)) & 0xff);
  };
  const std::uint64_t mOff = get64(16), mLen = get64(24), dOff = get64(32), dLen = get64(40);
  nlohmann::json m = nlohmann::json::parse(art.substr(mOff, mLen));
  edit(m);
  const std::string manifest = m.dump();
  const std::uint64_t newDOff = (mOff + manifest.size() + 63) / 64 * 64;
  std::string out = art.substr(0, mOff) + manifest + std::string(newDOff - mOff - manifest.size(), '\0') +
                    art.substr(dOff, dLen) + std::string(8, '\0');
  put64(out, 24, manifest.size());
  put64(out, 32, newDOff);
  put64(out, 48, out.size());
  put64(out, out.size() - 8, txl::driver::contentHash(out.data(), out.size() - 8));
  return out;
}

// A state file `st` (safetensors) with metadata `key` set to `value`.
std::string stateWithMetadata(const std::string& st, const std::string& key, const std::string& value) {
  std::uint64_t n = 0;
  for (int i = 7; i >= 0; --i) n = (n << 8) | std::uint8_t(st[std::size_t(i)]);
  nlohmann::json h = nlohmann::json::parse(st.substr(8, n));
  h["__metadata__"][key] = value;
  std::string header = h.dump();
  header.append((8 - header.size() % 8) % 8, ' ');
  std::string out(8, '\0');
  for (int i = 0; i < 8; ++i) out[std::size_t(i)] = char((header.size() >> (8 * i)) & 0xff);
  return out + header + st.substr(8 + n);
}

// A crafted artifact whose manifest is `manifest` (any text), fixed up like
// artifactWithManifest().
std::string artifactWithManifestText(const std::string& art, const std::string& manifest) {
  auto get64 = [&](std::size_t at) {
    std::uint64_t v = 0;
    for (int i = 7; i >= 0; --i) v = (v << 8) | std::uint8_t(art[at + std::size_t(i)]);
    return v;
  };
  auto put64 = [](std::string& s, std::size_t at, std::uint64_t v) {
    for (int i = 0; i < 8; ++i) s[at + std::size_t(i)] = char((v >> (8 * i)) & 0xff);
  };
  const std::uint64_t mOff = get64(16), dOff = get64(32), dLen = get64(40);
  const std::uint64_t newDOff = (mOff + manifest.size() + 63) / 64 * 64;
  std::string out = art.substr(0, mOff) + manifest + std::string(newDOff - mOff - manifest.size(), '\0') +
                    art.substr(dOff, dLen) + std::string(8, '\0');
  put64(out, 24, manifest.size());
  put64(out, 32, newDOff);
  put64(out, 48, out.size());
  put64(out, out.size() - 8, txl::driver::contentHash(out.data(), out.size() - 8));
  return out;
}

// Changes the first integer attribute `attr` of stored graph `graph` by
// `delta` and stores the graph's new hash, as an attacker can.
void alterGraphAttr(nlohmann::json& m, std::size_t graph, const std::string& attr, std::int64_t delta) {
  nlohmann::json& g = m["graphs"][graph];
  for (auto& node : g["graph"]["nodes"])
    if (node.contains("attrs") && node["attrs"].contains(attr) && node["attrs"][attr].is_number_integer()) {
      node["attrs"][attr] = node["attrs"][attr].get<std::int64_t>() + delta;
      break;
    }
  const std::string text = g["graph"].dump();
  g["hash"] = txl::driver::hex64(txl::driver::contentHash(text.data(), text.size()));
}

// Literal text, with "…" matching any run of characters on the line.
bool matchesLine(const std::string& expected, const std::string& line) {
  std::string pattern;
  for (std::size_t i = 0; i < expected.size(); ++i) {
    if (expected.compare(i, 3, "…") == 0) {
      pattern += ".*";
      i += 2;
    } else if (std::strchr("\\^$.|?*+()[]{}", expected[i])) {
      pattern += '\\';
      pattern += expected[i];
    } else {
      pattern += expected[i];
    }
  }
  return std::regex_match(line, std::regex(pattern));
}

struct Row {
  std::string id;                                          // as in docs/ERRORS.md
  std::vector<std::pair<std::string, std::string>> files;  // name -> bytes, written before the run
  std::vector<std::string> args;                           // after "txlc"; "@model" is the kjv-char model
  int exitCode;
  std::string message;  // the whole of stderr, one line
};

// Files every row can use: spec.json (the tiny conformance model),
// w.safetensors (its weights), t.txla (compiled from them), r.txla (the same
// spec with random weights: another model) and s.safetensors (a state of t.txla).
void makeFixtures(const std::string& dir) {
  writeFile(dir + "/spec.json", tinySpec().dump());
  fs::copy_file(kTests + "/conformance/tiny_base/weights.safetensors", dir + "/w.safetensors");
  for (auto args : std::vector<std::vector<std::string>>{
           // The literal graph: these rows test input checks, not passes.
           {kTxlc, "compile", "spec.json", "--weights", "w.safetensors", "--passes", "none", "-o", "t.txla"},
           {kTxlc, "compile", "spec.json", "--random-weights", "--passes", "none", "-o", "r.txla"},
           {kTxlc, "run", "t.txla", "--tokens", "1 2 3", "--qlen", "6", "--state-out", "s.safetensors"}}) {
    auto r = runProcess(args, dir, kTimeout);
    INFO(args[1] << ": " << r.err);
    REQUIRE(r.exitCode == 0);
  }
}

std::vector<Row> rows(const std::string& dir) {
  const std::string art = readFile(dir + "/t.txla");
  const std::string st = readFile(dir + "/s.safetensors");
  auto patched = [&](std::size_t at, const std::string& bytes) {
    std::string a = art;
    a.replace(at, bytes.size(), bytes);
    return a;
  };
  auto compileSpec = [&](const std::string& file) {
    return std::vector<std::string>{"compile", file, "--random-weights", "-o", "out.txla"};
  };
  auto compileWeights = [&](const std::string& file) {
    return std::vector<std::string>{"compile", "spec.json", "--weights", file, "-o", "out.txla"};
  };
  const std::string e = "txlc: error: ";
  using V = std::vector<std::string>;
  auto hostile = [](const std::string& name) { return readFile(kTests + "/data/checkpoints/hostile/" + name); };
  // Imports to out.txla, which every row checks was not created.
  auto importArgs = [](const std::string& file) { return V{"import", file, "--spec", "spec.json", "-o", "out.txla"}; };
  return {
      // Specs.
      {"spec-syntax",
       {{"bad.json", "{\"n_token\": 97,, }"}},
       compileSpec("bad.json"),
       3,
       e + "bad.json: line 1 column 16: syntax error while parsing object key - unexpected ','; expected string literal"},
      {"spec-type",
       {{"bad.json", specWith([](auto& j) { j["d_head"] = "8"; })}},
       compileSpec("bad.json"),
       3,
       e + "bad.json: /d_head: expected a positive integer, got \"8\""},
      {"spec-missing",
       {{"bad.json", specWith([](auto& j) { j.erase("n_layer"); })}},
       compileSpec("bad.json"),
       3,
       e + "bad.json: /n_layer: required key is missing"},
      {"spec-zero",
       {{"bad.json", specWith([](auto& j) { j["d_head"] = 0; })}},
       compileSpec("bad.json"),
       3,
       e + "bad.json: /d_head: expected a positive integer, got 0"},
      {"spec-negative",
       {{"bad.json", specWith([](auto& j) { j["n_head"] = -2; })}},
       compileSpec("bad.json"),
       3,
       e + "bad.json: /n_head: expected a positive integer, got -2"},
      {"spec-huge",
       {{"bad.json", specWith([](auto& j) { j["n_token"] = std::int64_t(1) << 32; })}},
       compileSpec("bad.json"),
       3,
       e + "bad.json: /n_token: expected a positive integer at most 2147483647, got 4294967296"},
      {"spec-overflow",
       {{"bad.json",
         specWith([](auto& j) { j["n_head"] = 2147483647, j["d_head"] = 2147483647, j["d_model"] = 2147483646; })}},
       compileSpec("bad.json"),
       3,
       e + "bad.json: /d_head: size product n_head × d_head × d_model overflows 64 bits"},
      {"spec-cutoffs",
       {{"bad.json", specWith([](auto& j) {
           j["cutoffs"] = {50, 20};
           j["tie_projs"] = {false, false, false};
         })}},
       compileSpec("bad.json"),
       3,
       e + "bad.json: /cutoffs/1: must be greater than /cutoffs/0 (50), got 20"},
      {"spec-cutoff-ntoken",
       {{"bad.json", specWith([](auto& j) {
           j["cutoffs"] = {97};
           j["tie_projs"] = {false, false};
         })}},
       compileSpec("bad.json"),
       3,
       e + "bad.json: /cutoffs/0: must be less than /n_token (97), got 97"},
      {"spec-div-val",
       {{"bad.json", specWith([](auto& j) { j["div_val"] = 0; })}},
       compileSpec("bad.json"),
       3,
       e + "bad.json: /div_val: expected a positive integer, got 0"},
      {"spec-duplicate",
       {{"bad.json", "{\"n_token\": 97, \"n_token\": 98}"}},
       compileSpec("bad.json"),
       3,
       e + "bad.json: /n_token: duplicate key"},
      {"spec-number-overflow",
       {{"bad.json", "{\"n_token\": 97, \"dropout\": 1e999}"}},
       compileSpec("bad.json"),
       3,
       e + "bad.json: line 1 column 28: number overflow parsing '1e999'"},
      {"spec-not-object",
       {{"bad.json", "[1, 2]"}},
       compileSpec("bad.json"),
       3,
       e + "bad.json: expected a JSON object at the top level, got [1,2]"},
      {"spec-missing-file",
       {},
       compileSpec("nope.json"),
       3,
       e + "nope.json: no such file or directory (expected a spec JSON file or a model directory)"},
      {"spec-ram",
       {{"big.json", specWith([](auto& j) {
           j["n_token"] = 1000, j["d_model"] = 8192, j["d_embed"] = 8192, j["n_head"] = 64, j["d_head"] = 128,
           j["d_inner"] = 65536, j["n_layer"] = 12;
         })}},
       compileSpec("big.json"),
       3,
       e + "big.json: random weights need 63.0 GiB (16920921064 f32 parameters); this machine has … of RAM"},
      {"plan-ram",
       {},
       V{"run", "spec.json", "--weights", "w.safetensors", "--tokens", "1", "--qlen", "1000000", "--mem-len",
         "1000000"},
       3,
       e + "spec.json: batch 1, qlen 1000000, mem_len 1000000 needs at least … (weights …, memory …, "
           "position tables …, segment activations …); this machine has … of RAM"},
      // The artifact's setting changed: refused before the re-planning note, so the error is the only line.
      {"plan-ram-artifact",
       {},
       V{"run", "t.txla", "--tokens", "1", "--qlen", "1000000", "--mem-len", "1000000"},
       3,
       e + "t.txla: batch 1, qlen 1000000, mem_len 1000000 needs at least … (weights …, memory …, "
           "position tables …, segment activations …); this machine has … of RAM"},
      // Safetensors files.
      {"st-short",
       {{"bad.safetensors", std::string("\x10\x00", 2)}},
       compileWeights("bad.safetensors"),
       3,
       e + "bad.safetensors: file of 2 bytes is too short for the 8-byte header length"},
      {"st-header-past-end",
       {{"bad.safetensors", std::string("\xe8\x03\0\0\0\0\0\0{}", 10)}},
       compileWeights("bad.safetensors"),
       3,
       e + "bad.safetensors: header length 1000 runs past the end of the file (10 bytes, 2 after the length)"},
      {"st-header-not-json",
       {{"bad.safetensors", safetensors("{\"a\": ]", 0)}},
       compileWeights("bad.safetensors"),
       3,
       e + "bad.safetensors: header: line 1 column 7: syntax error while parsing value - unexpected ']'; expected '[', "
           "'{', or a literal"},
      {"st-header-not-object",
       {{"bad.safetensors", safetensors("[1,2]", 0)}},
       compileWeights("bad.safetensors"),
       3,
       e + "bad.safetensors: header: expected a JSON object, got [1,2]"},
      {"st-dtype",
       {{"bad.safetensors", safetensors(R"({"x":{"dtype":"F33","shape":[1],"data_offsets":[0,4]}})", 4)}},
       compileWeights("bad.safetensors"),
       3,
       e + "bad.safetensors: tensor \"x\": unknown dtype \"F33\" (expected F64, F32, F16, BF16, F8_E4M3, F8_E5M2, I64, "
           "I32, I16, I8, U64, U32, U16, U8 or BOOL)"},
      {"st-shape-bytes",
       {{"bad.safetensors", safetensors(R"({"x":{"dtype":"F32","shape":[2,3],"data_offsets":[0,12]}})", 12)}},
       compileWeights("bad.safetensors"),
       3,
       e + "bad.safetensors: tensor \"x\": data_offsets [0, 12] hold 12 bytes, shape [2,3] of F32 needs 24"},
      {"st-out-of-range",
       {{"bad.safetensors", safetensors(R"({"x":{"dtype":"F32","shape":[6],"data_offsets":[0,24]}})", 10)}},
       compileWeights("bad.safetensors"),
       3,
       e + "bad.safetensors: tensor \"x\": data_offsets [0, 24] run past the data section (10 bytes)"},
      {"st-overlap",
       {{"bad.safetensors", safetensors(R"({"a":{"dtype":"F32","shape":[4],"data_offsets":[0,16]},)"
                                        R"("b":{"dtype":"F32","shape":[4],"data_offsets":[8,24]}})",
                                        24)}},
       compileWeights("bad.safetensors"),
       3,
       e + "bad.safetensors: tensors \"a\" [0, 16] and \"b\" [8, 24] overlap"},
      {"st-duplicate",
       {{"bad.safetensors", safetensors(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},)"
                                        R"("a":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})",
                                        8)}},
       compileWeights("bad.safetensors"),
       3,
       e + "bad.safetensors: header: /a: duplicate key"},
      {"st-nan",
       {{"bad.safetensors", weightsWith("crit.out_layers.0.bias", 3, std::nanf(""))}},
       compileWeights("bad.safetensors"),
       3,
       e + "bad.safetensors: tensor \"crit.out_layers.0.bias\": element 3 is NaN (1 non-finite values); non-finite "
           "weights are refused"},
      {"st-inf",
       {{"bad.safetensors", weightsWith("r_w_bias", 0, -std::numeric_limits<float>::infinity())}},
       compileWeights("bad.safetensors"),
       3,
       e + "bad.safetensors: tensor \"r_w_bias\": element 0 is -Inf (1 non-finite values); non-finite weights are "
           "refused"},
      // Finite weights whose outputs overflow: no NaN or Inf is ever a result.
      {"output-nan-run",
       {{"big.safetensors", weightsWith("word_emb.emb_layers.0.weight", 0, 3e38f)}},
       V{"run", "spec.json", "--weights", "big.safetensors", "--tokens", "0 1 2"},
       3,
       e + "spec.json: the hidden state of token 1 of stream 0 is NaN; a weights file or artifact changed during the "
           "run, or the model overflows"},
      {"output-nan-score",
       {{"big.safetensors", weightsWith("word_emb.emb_layers.0.weight", 0, 3e38f)}, {"ids.txt", "0 1 2 3 4 5\n"}},
       V{"score", "spec.json", "ids.txt", "--weights", "big.safetensors", "--ids"},
       3,
       e + "ids.txt: the NLL of token 1 of stream 0 (segment at token 0) is NaN; a weights file or artifact changed "
           "during the run, or the model overflows"},
      // The same through generate and score --documents (a word vocabulary of the tiny model's 97 symbols).
      {"output-nan-generate",
       {{"big.safetensors", weightsWith("word_emb.emb_layers.0.weight", 0, 3e38f)}, {"vocab.txt", words97()}},
       V{"generate", "spec.json", "--weights", "big.safetensors", "--vocab", "vocab.txt", "--prompt", "w0 w1 w2", "-n",
         "3", "--no-echo"},
       3,
       e + "spec.json: the log-probability of token id 0 after 3 tokens is NaN; a weights file or artifact changed "
           "during the run, or the model overflows"},
      {"output-nan-documents",
       {{"big.safetensors", weightsWith("word_emb.emb_layers.0.weight", 0, 3e38f)},
        {"vocab.txt", words97()},
        {"docs.txt", "w0 w1 w2 w3\n"}},
       V{"score", "spec.json", "--weights", "big.safetensors", "--vocab", "vocab.txt", "--documents", "docs.txt",
         "--strict"},
       3,
       e + "docs.txt: document 1 (line 1): its NLL is NaN; a weights file or artifact changed during the run, or the "
           "model overflows (--strict)"},
      // Token ids and text.
      {"tokens-range",
       {},
       V{"run", "t.txla", "--tokens", "5 97", "--qlen", "6"},
       3,
       e + "--tokens: line 1 column 3: expected a token id in [0, 97), got \"97\""},
      {"tokens-negative",
       {},
       V{"run", "t.txla", "--tokens", "-1", "--qlen", "6"},
       3,
       e + "--tokens: line 1 column 1: expected a token id in [0, 97), got \"-1\""},
      {"tokens-empty",
       {},
       V{"run", "t.txla", "--tokens", "", "--qlen", "6"},
       3,
       e + "--tokens: expected token ids, got none"},
      {"ids-file-range",
       {{"ids.txt", "1 2\n3 400\n"}},
       V{"score", "t.txla", "ids.txt", "--ids"},
       3,
       e + "ids.txt: line 2 column 3: expected a token id in [0, 97), got \"400\""},
      {"text-empty",
       {{"empty.txt", ""}},
       V{"score", "@model", "empty.txt"},
       3,
       e + "empty.txt: empty input, expected text to score"},
      {"text-symbol",
       {{"odd.txt", "In the beginning \xe2\x82\xac\n"}},
       V{"score", "@model", "odd.txt"},
       3,
       e + "odd.txt: line 1 column 18: character '€' (U+20AC) is not in the vocabulary (…/models/kjv-char/vocab.json, 73 symbols)"},
      // Documents (txlc score --documents).
      {"documents-strict",
       {{"docs.txt", "In the beginning\n\nAnd God\n"}},
       V{"score", "@model", "--documents", "docs.txt", "--strict"},
       3,
       e + "docs.txt: document 2 (line 2): empty document (--strict)"},
      {"documents-other-corpus",
       {{"docs.txt", "In the beginning\nAnd God\n"}, {"o.jsonl.partial", "{\"id\":7,\"tokens\":3}\n"}},
       V{"score", "@model", "--documents", "docs.txt", "-o", "o.jsonl", "--resume"},
       3,
       e + "o.jsonl.partial: line 1 is document 7, expected document 1 of this corpus (an output of another corpus? "
           "remove it or drop --resume)"},
      {"documents-id-deep",
       {{"docs.jsonl", "{\"id\": " + std::string(100000, '[') + std::string(100000, ']') + ", \"text\": \"In\"}\n"}},
       V{"score", "@model", "--documents", "docs.jsonl"},
       3,
       e + "docs.jsonl: line 1: JSON nested deeper than 64 levels, expected at most 64"},
      {"documents-id-size",
       {{"docs.jsonl", "{\"text\": \"In the\"}\n{\"id\": \"" + std::string(5000, 'a') + "\", \"text\": \"In\"}\n"}},
       V{"score", "@model", "--documents", "docs.jsonl"},
       3,
       e + "docs.jsonl: line 2: an \"id\" of 5002 bytes as JSON, expected at most 4096"},
      {"documents-resume-no-record",
       {{"docs.txt", "In the beginning\nAnd God\n"}, {"o.jsonl.partial", "{\"id\":1,\"tokens\":15,\"nll_sum\":9}\n"}},
       V{"score", "@model", "--documents", "docs.txt", "-o", "o.jsonl", "--resume"},
       3,
       e + "o.jsonl.run.json: expected the record of the run that wrote o.jsonl.partial (its model, corpus and "
           "options), found none (o.jsonl.partial is another run's; remove it or drop --resume)"},
      {"documents-and-file",
       {},
       V{"score", "@model", "docs.txt", "--documents", "docs.txt"},
       2,
       e + "--documents: excludes FILE (run 'txlc --help')"},
      {"documents-resume-stdout",
       {},
       V{"score", "@model", "--documents", "docs.txt", "--resume"},
       2,
       e + "--resume: needs -o FILE (run 'txlc --help')"},
      // Artifacts and state files.
      {"artifact-truncated",
       {{"bad.txla", art.substr(0, art.size() / 2)}},
       V{"run", "bad.txla", "--tokens", "1"},
       3,
       e + "bad.txla: truncated: the header says … bytes, the file holds …"},
      {"artifact-checksum",
       {{"bad.txla", patched(art.size() / 2, std::string("\x5a\xa5", 2))}},
       V{"run", "bad.txla", "--tokens", "1"},
       3,
       e + "bad.txla: corrupt: checksum … does not match the stored …"},
      {"artifact-version",
       {{"bad.txla", patched(8, std::string("\x63\0\0\0", 4))}},
       V{"run", "bad.txla", "--tokens", "1"},
       3,
       e + "bad.txla: artifact format version 99, this txlc reads version 3; recompile it with this txlc"},
      {"artifact-shape-overflow",
       {{"bad.txla",
         artifactWithManifest(
             art,
             [](nlohmann::json& m) {
               m["weights"][0]["shape"] = {std::int64_t(1) << 40, std::int64_t(1) << 40, std::int64_t(1) << 40};
             })}},
       V{"run", "bad.txla", "--tokens", "1"},
       3,
       e + "bad.txla: manifest /weights/0/shape: [1099511627776,1099511627776,1099511627776] of f32 needs 2^64 bytes "
           "or more, expected at most the …-byte data section"},
      {"artifact-not",
       {{"bad.txla", "hello"}},
       V{"run", "bad.txla", "--tokens", "1"},
       3,
       e + "bad.txla: a text file, not a model (MODEL comes before FILE); expected a model folder, a spec JSON file, a "
           "PyTorch checkpoint (.bin, .pt), safetensors weights with config.json beside them, or a compiled artifact"},
      {"artifact-graph-altered",
       {{"bad.txla", artifactWithManifest(art, [](nlohmann::json& m) { alterGraphAttr(m, 1, "axis", 1); })}},
       V{"run", "bad.txla", "--tokens", "1"},
       3,
       e + "bad.txla: manifest /graphs/1 (\"score-warmup\", qlen 6, mlen 6): not the graph this txlc (0.1.0) builds "
           "from the stored spec, setting and passes; the artifact was altered, or compiled by another txlc (0.1.0); "
           "recompile it"},
      {"info-graph-altered",
       {{"bad.txla", artifactWithManifest(art, [](nlohmann::json& m) { alterGraphAttr(m, 1, "axis", 1); })}},
       V{"info", "bad.txla"},
       3,
       e + "bad.txla: manifest /graphs/1 (\"score-warmup\", qlen 6, mlen 6): not the graph this txlc (0.1.0) builds "
           "from the stored spec, setting and passes; the artifact was altered, or compiled by another txlc (0.1.0); "
           "recompile it"},
      {"artifact-graphs-extra",
       {{"bad.txla", artifactWithManifest(art, [](nlohmann::json& m) { m["graphs"].push_back(m["graphs"][0]); })}},
       V{"run", "bad.txla", "--tokens", "1"},
       3,
       e + "bad.txla: manifest /graphs: 5 graphs, the stored setting (qlen 6, mem_len 6) has 4"},
      {"artifact-setting-batch",
       {{"bad.txla",
         artifactWithManifest(art, [](nlohmann::json& m) { m["setting"]["batch"] = std::int64_t(1) << 62; })}},
       V{"run", "bad.txla", "--tokens", "1"},
       3,
       e + "bad.txla: manifest /setting/batch: expected a positive integer at most 1048576, got 4611686018427387904"},
      {"artifact-weight-missing",
       {{"bad.txla", artifactWithManifest(art,
                                          [](nlohmann::json& m) {
                                            auto& w = m["weights"];
                                            for (std::size_t i = 0; i < w.size(); ++i)
                                              if (w[i]["name"] == "r_w_bias") {
                                                w.erase(i);
                                                break;
                                              }
                                          })}},
       V{"run", "bad.txla", "--tokens", "1"},
       3,
       e + "bad.txla: manifest /weights: weight \"r_w_bias\" of the stored spec is missing"},
      {"artifact-manifest-deep",
       {{"bad.txla", artifactWithManifestText(art, std::string(300000, '['))}},
       V{"run", "bad.txla", "--tokens", "1"},
       3,
       e + "bad.txla: manifest: /0/…/0: JSON nested deeper than 64 levels"},
      {"artifact-passes-unknown",
       {{"bad.txla", artifactWithManifest(art, [](nlohmann::json& m) { m["passes"] = {"frobnicate"}; })}},
       V{"run", "bad.txla", "--tokens", "1"},
       3,
       e + "bad.txla: manifest /passes/0: unknown pass 'frobnicate' (known: …)"},
      {"model-dir-no-config",
       {},
       V{"run", kTests + "/conformance/nomem", "--tokens", "1"},
       3,
       e + "…/conformance/nomem: no config.json (a model directory holds config.json, one *.safetensors file or a "
           "PyTorch checkpoint, and optionally vocab.json, vocab.txt or vocab.pkl)"},
      {"state-other-model",
       {},
       V{"run", "r.txla", "--tokens", "1 2", "--qlen", "6", "--state-in", "s.safetensors"},
       3,
       e + "s.safetensors: a state for model …, this model (r.txla) is …"},
      {"state-metadata-mlen",
       {{"m.safetensors", stateWithMetadata(st, "mlen", "2")}},
       V{"run", "t.txla", "--tokens", "1 2", "--qlen", "6", "--state-in", "m.safetensors"},
       3,
       e + "m.safetensors: tensor \"mem.0\": expected [mlen 2, batch 1, width] as its metadata says, got [3,1,16]"},
      {"state-semantics",
       {{"m.safetensors", stateWithMetadata(st, "semantics", "huggingface")}},
       V{"run", "t.txla", "--tokens", "1 2", "--qlen", "6", "--state-in", "m.safetensors"},
       3,
       e + "m.safetensors: __metadata__/semantics: a state of huggingface semantics, this model (t.txla) runs authors "
           "semantics"},
      {"state-model-id-long",
       {{"m.safetensors", stateWithMetadata(st, "model_id", std::string(5000000, 'm'))}},
       V{"run", "t.txla", "--tokens", "1 2", "--qlen", "6", "--state-in", "m.safetensors"},
       3,
       e + "m.safetensors: a state for model mm…mm... (5000000 bytes), this model (t.txla) is …"},
      {"state-not-state",
       {},
       V{"run", "t.txla", "--tokens", "1 2", "--qlen", "6", "--state-in", "w.safetensors"},
       3,
       e + "w.safetensors: __metadata__/format: missing; expected a txlc state file"},
      // PyTorch checkpoints (the hostile fixtures, tests/data/checkpoints/hostile/).
      {"ckpt-global",
       {{"reduce_os_system.bin", hostile("reduce_os_system.bin")}},
       importArgs("reduce_os_system.bin"),
       3,
       e + "reduce_os_system.bin: reduce_os_system/data.pkl: offset 199: global os.system is not allowed (a checkpoint "
           "may only name collections.OrderedDict, torch._utils._rebuild_tensor_v2, torch._utils._rebuild_parameter, "
           "torch.<Kind>Storage, builtins.set and the module classes of a MemTransformerLM)"},
      {"ckpt-truncated",
       {{"truncated_storage.bin", hostile("truncated_storage.bin")}},
       importArgs("truncated_storage.bin"),
       3,
       e + "truncated_storage.bin: tensor \"transformer.word_emb.emb_layers.0.weight\": storage \"0\" (zip entry "
           "\"truncated_storage/data/0\") has 6144 bytes; its 3072 F32 elements need 12288"},
      {"ckpt-offset",
       {{"offset_past_end.bin", hostile("offset_past_end.bin")}},
       importArgs("offset_past_end.bin"),
       3,
       e + "offset_past_end.bin: tensor \"transformer.layers.0.dec_attn.o_net.weight\": storage offset 4096 is past "
           "storage \"0\"'s 1024 elements"},
      {"ckpt-int64",
       {{"dtype_int64.bin", hostile("dtype_int64.bin")}},
       importArgs("dtype_int64.bin"),
       3,
       e + "dtype_int64.bin: tensor \"transformer.layers.0.pos_ff.CoreNet.0.weight\": storage \"8\" is int64 "
           "(torch.LongStorage); a weight must be a float type (F32, F16, BF16 or F64), integers are never reinterpreted"},
      {"ckpt-state-dict-no-spec",
       {{"state_dict.pt", readFile(kTests + "/data/checkpoints/authors_model/state_dict.pt")}},
       V{"import", "state_dict.pt", "-o", "out.txla"},
       3,
       e + "state_dict.pt: a state dict carries no hyperparameters; pass --spec SPEC (a Hugging Face config.json or a "
           "reference-style spec), or put config.json beside it"},
      // Sizes, threads, outputs, quoting.
      // The command line refuses a size beyond the setting's bound (driver/compile.h) as a usage error.
      {"size-batch-flag",
       {},
       V{"inspect", "spec.json", "--batch", "1099511627776"},
       2,
       e + "--batch: expected a positive integer at most 1048576, got '1099511627776' (run 'txlc --help')"},
      {"size-qlen-flag",
       {},
       V{"run", "t.txla", "--tokens", "1", "--qlen", "1048577"},
       2,
       e + "--qlen: expected a positive integer at most 1048576, got '1048577' (run 'txlc --help')"},
      {"spec-tgt-len-huge",
       {{"bad.json", specWith([](auto& j) { j["tgt_len"] = std::int64_t(1) << 30; })}},
       V{"inspect", "bad.json"},
       3,
       e + "bad.json: /tgt_len: expected a positive integer at most 1048576, got 1073741824"},
      {"spec-mem-len-huge",
       {{"bad.json", specWith([](auto& j) { j["mem_len"] = std::int64_t(1) << 30; })}},
       V{"inspect", "bad.json"},
       3,
       e + "bad.json: /mem_len: expected a non-negative integer at most 1048576, got 1073741824"},
      {"bench-threads-bound",
       {},
       V{"bench", "t.txla", "--threads", "2,4096"},
       3,
       e + "--threads: expected a positive integer at most … (4 per core this process may use), got 4096"},
      {"run-output-bound",
       {{"ids.txt",
         [] {
           std::string ids;
           for (int i = 0; i < 500000; ++i) ids += "1 ";
           return ids;
         }()}},
       V{"run", "t.txla", "--tokens-file", "ids.txt"},
       3,
       e + "ids.txt: 500000 positions × 1 streams give 56500000 output values, more than run writes (at most 1 GiB "
           "of JSON and half of RAM in all); use --no-logprob, --format safetensors -o FILE, or fewer tokens"},
      {"recompile-output-is-input",
       {},
       V{"compile", "t.txla", "-o", "t.txla"},
       3,
       e + "t.txla: is an input of this command (t.txla); txlc never overwrites its inputs"},
      {"size-product",
       {},
       V{"inspect", "spec.json", "--batch", "1048576", "--qlen", "1048576"},
       3,
       e + "--batch: the attention scores (batch × n_head × qlen × (qlen + mem_len)) would hold more than 2^48 "
           "elements; batch 1048576, qlen 1048576, mem_len … are too large for this model"},
      {"threads-bound",
       {},
       V{"run", "t.txla", "--tokens", "1", "--threads", "4096"},
       3,
       e + "--threads: expected a positive integer at most … (4 per core this process may use), got 4096"},
      {"output-is-input",
       {},
       V{"compile", "spec.json", "--weights", "w.safetensors", "-o", "w.safetensors"},
       3,
       e + "w.safetensors: is an input of this command (w.safetensors); txlc never overwrites its inputs"},
      {"quote-long-token",
       {{"ids.txt", std::string(5000000, 'x')}},
       V{"score", "t.txla", "ids.txt", "--ids"},
       3,
       e + "ids.txt: line 1 column 1: expected a token id in [0, 97), got \"xx…xx...\" (5000000 bytes)"},
      {"quote-long-pass",
       {},
       V{"inspect", "spec.json", "--passes", std::string(5000, 'q')},
       2,
       e + "--passes: unknown pass 'qq…qq... (5000 bytes)'; known: … (run 'txlc --help')"},
      {"quote-long-flag",
       {},
       V{"run", "t.txla", "--tokens", "1", "--" + std::string(5000, 'q')},
       2,
       e + "unknown flag '--qq…qq... (5002 bytes)' for 'run' (run 'txlc run --help')"},
      {"spec-nul-filled",
       {{"bad.json", std::string(1000, '\0')}},
       compileSpec("bad.json"),
       3,
       e + "bad.json: line 1 column 1: a NUL byte (U+0000); expected JSON text"},
      {"quote-nul-key",
       {{"bad.json", std::string("{\"n_token\": 97, \"a\0b\": 1, \"a\0b\": 2}", 36)}},
       compileSpec("bad.json"),
       3,
       e + "bad.json: line 1 column 19: syntax error while parsing object key - invalid string: control character "
           "U+0000 (NUL) must be escaped to \\u0000; last read: '\"a<U+0000>'; expected string literal"},
      {"spec-layers",
       {{"bad.json", specWith([](auto& j) { j["n_layer"] = 10000; })}},
       compileSpec("bad.json"),
       3,
       e + "bad.json: /n_layer: expected at most 256 layers, got 10000"},
      {"config-bare",
       {{"config.json", "{\"model_type\":\"transfo-xl\"}"}},
       compileSpec("config.json"),
       3,
       e + "config.json: /vocab_size: required key is missing"},
      // Command-line mistakes.
      {"cli-no-command", {}, V{}, 2, e + "A subcommand is required (run 'txlc --help')"},
      {"cli-unknown-command",
       {},
       V{"frob"},
       2,
       e + "unknown command 'frob'; expected one of: bench, conformance, compile, inspect, score, generate, serve, run, import, info, completion (run "
           "'txlc --help')"},
      {"cli-unknown-flag",
       {},
       V{"run", "t.txla", "--tokens", "1", "--bogus"},
       2,
       e + "unknown flag '--bogus' for 'run' (run 'txlc run --help')"},
      {"cli-qlen-zero",
       {},
       V{"run", "t.txla", "--tokens", "1", "--qlen", "0"},
       2,
       e + "--qlen: expected a positive integer, got '0' (run 'txlc --help')"},
      {"cli-batch-word",
       {},
       V{"run", "t.txla", "--tokens", "1", "--batch", "two"},
       2,
       e + "--batch: expected a positive integer, got 'two' (run 'txlc --help')"},
      {"cli-missing-model", {}, V{"run"}, 2, e + "model is required (run 'txlc --help')"},
      {"cli-weights-and-random",
       {},
       V{"compile", "spec.json", "--weights", "w.safetensors", "--random-weights", "-o", "x"},
       2,
       e + "--weights excludes --random-weights (run 'txlc --help')"},
      {"cli-backend",
       {},
       V{"run", "t.txla", "--tokens", "1", "--qlen", "6", "--backend", "gpu"},
       2,
       e + "--backend: expected 'onednn' or 'reference', got 'gpu' (run 'txlc --help')"},
  };
}

}  // namespace

TEST_CASE("every bad input of docs/ERRORS.md gives its one-line message and exit code", "[robustness][cli]") {
  const std::string dir = txl::test::makeTempDir("txlc-bad-input");
  makeFixtures(dir);
  const std::string errorsDoc = readFile(kSource + "/docs/ERRORS.md");
  const double ram = double(::sysconf(_SC_PHYS_PAGES)) * double(::sysconf(_SC_PAGE_SIZE));
  if (std::getenv("TXL_PRINT_ERRORS_TABLE"))  // for docs/ERRORS.md
    for (const Row& row : rows(dir)) std::cout << row.id << "\t" << row.exitCode << "\t" << row.message << "\n";
  for (const Row& row : rows(dir)) {
    // The RAM row needs a machine with less RAM than its 63 GiB of weights.
    if (row.id == "spec-ram" && ram > 63.0 * double(1ull << 30)) continue;
    {
      for (const auto& [name, bytes] : row.files) writeFile(dir + "/" + name, bytes);
      std::vector<std::string> argv{kTxlc};
      for (auto a : row.args) argv.push_back(a == "@model" ? kSource + "/models/kjv-char" : a);
      auto r = runProcess(argv, dir, kTimeout);
      INFO("row " << row.id << "\nstderr: " << r.err << "stdout: " << r.out);
      CHECK_FALSE(r.timedOut);
      CHECK(r.signal == 0);
      CHECK(r.exitCode == row.exitCode);
      REQUIRE(!r.err.empty());
      CHECK(r.err.back() == '\n');
      const std::string line = r.err.substr(0, r.err.size() - 1);
      CHECK(line.find('\n') == std::string::npos);
      CHECK(matchesLine(row.message, line));
      CHECK(r.out.empty());
      CHECK(errorsDoc.find("`" + row.message + "`") != std::string::npos);
      for (const auto& [name, bytes] : row.files) fs::remove(dir + "/" + name);
      CHECK_FALSE(fs::exists(dir + "/out.txla"));
    }
  }
  fs::remove_all(dir);
}

// A warning quotes file text as an error does: a 300,000-byte unknown key of
// a spec is cut in its JSON pointer, and the compile still succeeds.
TEST_CASE("a warning about a huge unknown key names it cut", "[robustness][cli]") {
  const std::string dir = txl::test::makeTempDir("txlc-long-key");
  nlohmann::json j = tinySpec();
  j[std::string(300000, 'k')] = 1;
  writeFile(dir + "/spec.json", j.dump());
  auto r =
      runProcess({kTxlc, "compile", dir + "/spec.json", "--random-weights", "-o", dir + "/out.txla"}, dir, kTimeout);
  INFO("stderr: " << r.err.substr(0, 400));
  CHECK(r.exitCode == 0);
  const std::string first = r.err.substr(0, r.err.find('\n'));
  CHECK(first.size() < 400);
  CHECK(matchesLine("txlc: warning: …/spec.json: /kk…kk... (300000 bytes): unknown key, ignored", first));
  fs::remove_all(dir);
}

// info prints what a manifest says, but never a control byte of it: a
// string that is not short and printable is shown quoted and escaped.
TEST_CASE("info shows manifest strings escaped", "[robustness][cli]") {
  const std::string dir = txl::test::makeTempDir("txlc-info-strings");
  makeFixtures(dir);
  writeFile(dir + "/odd.txla", artifactWithManifest(readFile(dir + "/t.txla"), [](nlohmann::json& m) {
              m["cpu_isa"] = "\x1b[2J" + std::string(1000, 'c');
            }));
  auto r = runProcess({kTxlc, "info", dir + "/odd.txla"}, dir, kTimeout);
  INFO("stderr: " << r.err << "stdout: " << r.out);
  CHECK(r.exitCode == 0);
  CHECK(r.out.find('\x1b') == std::string::npos);
  CHECK(r.out.find("on \"\\x1b[2Jccc") != std::string::npos);
  CHECK(r.out.find("...\" (1004 bytes)") != std::string::npos);
  fs::remove_all(dir);
}

// Without --threads the team is OMP_NUM_THREADS: the same bound holds, and
// the message names the variable, not a flag the user did not give.
TEST_CASE("an OMP_NUM_THREADS beyond the thread bound is refused by its name", "[robustness][cli]") {
  const std::string dir = txl::test::makeTempDir("txlc-omp-threads");
  makeFixtures(dir);
  auto r = runProcess({"/usr/bin/env", "OMP_NUM_THREADS=5000", kTxlc, "run", "t.txla", "--tokens", "1"}, dir, kTimeout);
  INFO("stderr: " << r.err << "stdout: " << r.out);
  CHECK(r.exitCode == 3);
  CHECK(r.out.empty());
  CHECK(
      matchesLine("txlc: error: OMP_NUM_THREADS: expected a positive integer at most … (4 per core this process may "
                  "use), got 5000\n",
                  r.err));
  fs::remove_all(dir);
}

// conformance reports on stdout (one line per case and a summary); a case it
// cannot read is also a bad input: its reason is the error line on stderr.
TEST_CASE("a conformance case.json that cannot be read names the field on stderr", "[robustness][cli]") {
  const std::string dir = txl::test::makeTempDir("txlc-bad-case");
  fs::copy(kTests + "/conformance/nomem", dir + "/case", fs::copy_options::recursive);
  const std::string file = dir + "/case/case.json";
  const nlohmann::json base = nlohmann::json::parse(readFile(file));
  nlohmann::json hugeBatch = base, hugeQlen = base, wrongMlen = base, noQlen = base;
  hugeBatch["batch"] = std::int64_t(1) << 40;
  // A segment's qlen and mlen must agree with its io tensors and the session: they are checked, not ignored.
  hugeQlen["segments"][1]["qlen"] = std::int64_t(1) << 40;
  wrongMlen["segments"][1]["mlen"] = base["segments"][1]["mlen"].get<std::int64_t>() + 7;
  noQlen["segments"][1].erase("qlen");
  const std::string qlen1 = std::to_string(base["segments"][1]["qlen"].get<std::int64_t>());
  const std::string mlen1 = std::to_string(base["segments"][1]["mlen"].get<std::int64_t>());
  const std::vector<std::pair<std::string, std::string>> cases{
      // The case's field is named, not a flag the user did not give.
      {hugeBatch.dump(), file + ": /batch: expected a positive integer at most 1048576, got 1099511627776"},
      {hugeQlen.dump(),
       file + ": /segments/1/qlen: expected " + qlen1 + " (the rows of seg1.input), got 1099511627776"},
      {wrongMlen.dump(), file + ": /segments/1/mlen: expected " + mlen1 +
                             " (the positions remembered before seg1), got " + std::to_string(std::stoll(mlen1) + 7)},
      {noQlen.dump(), file + ": /segments/1/qlen: expected an integer, got nothing (the field is missing)"},
      {R"({"format": "txl-conformance/1", "name": 5})", file + ": /name: expected a string, got a number 5"},
      {R"({"format": 7})", file + ": /format: expected a string, got a number 7"},
      {"[1]", file + ": expected a JSON object, got a JSON array"},
      {R"({"format": "txl-conformance/1", "tolerance": {"atol": 1, "rtol": 1}})",
       file + ": /tolerance/rel_l2: expected a finite number, got nothing (the field is missing)"},
      {R"({"format": "txl-conformance/1", "tolerance": {"atol": 1, "rtol": 1, "rel_l2": 1}, "config": "x"})",
       file + ": /config: expected the model's configuration (an object), got a string \"x\""},
  };
  for (const auto& [body, message] : cases) {
    writeFile(file, body);
    auto r = runProcess({kTxlc, "conformance", dir + "/case"}, dir, kTimeout);
    INFO(body << "\nstderr: " << r.err << "stdout: " << r.out);
    CHECK(r.exitCode == 3);
    CHECK(r.err == "txlc: error: " + message + "\n");
    CHECK(r.out.find("FAIL") == 0);
    CHECK(r.out.find("0 passed, 1 failed (1 could not be read)") != std::string::npos);
  }
  fs::remove_all(dir);
}

// The strict JSON parser is linear: 2 MB of `[{},{},...]` in a spec, a
// safetensors header and a vocab.json is refused (or read) in well under the
// limit even under ASan, not rescanned after every object.
TEST_CASE("2 MB of small JSON objects parse in linear time", "[robustness][cli]") {
  const std::string dir = txl::test::makeTempDir("txlc-linear-json");
  makeFixtures(dir);
  std::string objects = "[";
  while (objects.size() < (2u << 20)) objects += "{},";
  objects += "{}]";
  nlohmann::json spec = tinySpec();
  writeFile(dir + "/spec-objects.json", spec.dump().substr(0, spec.dump().size() - 1) + ",\"x\":" + objects + "}");
  writeFile(dir + "/w-objects.safetensors", safetensors("{\"x\":" + objects + "}", 0));
  fs::create_directory(dir + "/vocab");
  writeFile(dir + "/vocab/vocab.json", objects);
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases{
      {{"compile", "spec-objects.json", "--random-weights", "-o", "out.txla"}, ""},
      {{"compile", "spec.json", "--weights", "w-objects.safetensors", "-o", "out.txla"}, "w-objects.safetensors: "},
      {{"score", "t.txla", "spec.json", "--vocab", "vocab/vocab.json"}, "vocab/vocab.json: "},
  };
  for (const auto& [args, prefix] : cases) {
    std::vector<std::string> argv{kTxlc};
    argv.insert(argv.end(), args.begin(), args.end());
    const auto start = std::chrono::steady_clock::now();
    auto r = runProcess(argv, dir, kTimeout);
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    INFO(args[0] << " " << args[1] << ": " << r.err.substr(0, 600));
    CHECK(seconds < 5.0);
    CHECK(r.signal == 0);
    if (prefix.empty()) {
      CHECK(r.exitCode == 0);  // an unknown key of a spec: a warning, the compile goes on
    } else {
      CHECK(r.exitCode == 3);
      CHECK(r.err.rfind("txlc: error: " + prefix, 0) == 0);
      CHECK(r.err.find('\n') == r.err.size() - 1);
    }
    fs::remove(dir + "/out.txla");
  }
  fs::remove_all(dir);
}

// An internal error names the txlc source below its root, never the build
// tree's absolute path (ir/check.cpp sourceName()).
TEST_CASE("an internal error line holds no absolute source path", "[robustness][cli]") {
  std::string message;
  try {
    TXL_CHECK(1 + 1 == 3, "a test of the message");
  } catch (const txl::InternalError& e) {
    message = e.what();
  }
  CHECK(message.rfind("internal error at tests/robustness/bad_input_test.cpp:", 0) == 0);
  CHECK(message.find(kSource) == std::string::npos);
  CHECK(message.find("(a test of the message)") != std::string::npos);
}

// A standalone executable's errors name it as invoked: its embedded
// artifact's vocabulary (72 symbols for a model of 73) is reported under the
// executable's name, not the placeholder of the embedded model.
TEST_CASE("a standalone executable's vocabulary error names the executable", "[robustness][cli]") {
  const std::string dir = txl::test::makeTempDir("txlc-exe-vocab");
  auto r = runProcess({kTxlc, "compile", kSource + "/models/kjv-char", "--emit", "exe", "-o", "kjv"}, dir, kTimeout);
  REQUIRE(r.exitCode == 0);
  const std::string exe = readFile(dir + "/kjv");
  auto get64 = [&](std::size_t at) {
    std::uint64_t v = 0;
    for (int i = 7; i >= 0; --i) v = (v << 8) | std::uint8_t(exe[at + std::size_t(i)]);
    return v;
  };
  const std::size_t offset = get64(exe.size() - 24), length = get64(exe.size() - 16);
  REQUIRE(offset + length + 24 == exe.size());
  const std::string art = artifactWithManifest(exe.substr(offset, length), [](nlohmann::json& m) {
    REQUIRE(m["vocabulary"]["symbols"].size() == 73);
    m["vocabulary"]["symbols"].erase(72);
  });
  std::string trailer = exe.substr(exe.size() - 24);
  for (int i = 0; i < 8; ++i) trailer[8 + std::size_t(i)] = char((std::uint64_t(art.size()) >> (8 * i)) & 0xff);
  writeFile(dir + "/kjv-bad", exe.substr(0, offset) + art + trailer);
  fs::permissions(dir + "/kjv-bad", fs::perms::owner_all);
  r = runProcess({dir + "/kjv-bad", "info"}, dir, kTimeout);
  INFO("stderr: " << r.err);
  CHECK(r.exitCode == 3);
  CHECK(r.out.empty());
  CHECK(r.err ==
        "txlc: error: " + dir + "/kjv-bad: manifest /vocabulary: 72 symbols, expected the model's n_token (73)\n");
  fs::remove_all(dir);
}
