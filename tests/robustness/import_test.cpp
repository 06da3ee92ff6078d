// tests/robustness/import_test.cpp - PyTorch checkpoints through the real txlc:
// a Hugging Face folder (pytorch_model.bin + vocab.pkl) runs as it is and gives
// exactly what its `txlc import` gives; hostile checkpoints end in one line,
// exit 3, no destination and no payload file.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "tests/robustness/run_process.h"

namespace fs = std::filesystem;
using txl::test::runProcess;

namespace {

const std::string kTxlc = TXLC_PATH;
const std::string kCheckpoints = std::string(TXL_TEST_DATA_DIR) + "/data/checkpoints";
constexpr double kTimeout = 300;

std::string readFile(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::ostringstream s;
  s << f.rdbuf();
  return s.str();
}

nlohmann::json runJson(const std::vector<std::string>& args, const std::string& dir) {
  std::vector<std::string> argv{kTxlc};
  argv.insert(argv.end(), args.begin(), args.end());
  auto r = runProcess(argv, dir, kTimeout);
  INFO(args[0] << " " << args[1] << ": " << r.err);
  REQUIRE(r.exitCode == 0);
  return nlohmann::json::parse(r.out);
}

}  // namespace

TEST_CASE("a Hugging Face checkpoint folder runs as it is and as its import, with the same outputs",
          "[robustness][cli]") {
  const std::string dir = txl::test::makeTempDir("txlc-import");
  // The folder a hub user has: config.json, pytorch_model.bin, vocab.pkl.
  fs::create_directory(dir + "/hf");
  for (const char* f : {"config.json", "pytorch_model.bin", "vocab.pkl"})
    fs::copy_file(kCheckpoints + "/hf_tiny/" + f, dir + "/hf/" + f);
  auto imported = runProcess({kTxlc, "import", "hf", "-o", "out"}, dir, kTimeout);
  INFO(imported.err);
  REQUIRE(imported.exitCode == 0);
  CHECK(imported.out.empty());
  CHECK(readFile(dir + "/out/vocab.txt") == readFile(kCheckpoints + "/hf_tiny/vocab.txt"));

  // Text of the vocabulary's words, so that scoring reads the vocabulary too.
  std::istringstream symbols(readFile(kCheckpoints + "/hf_tiny/vocab.txt"));
  std::string text, word;
  for (int i = 0; std::getline(symbols, word); ++i) text += word + (i % 9 == 8 ? "\n" : " ");
  std::ofstream(dir + "/text.txt") << text << "\n";

  const auto scoreHf = runJson({"score", "hf", "text.txt", "--json", "--qlen", "5"}, dir);
  const auto scoreOut = runJson({"score", "out", "text.txt", "--json", "--qlen", "5"}, dir);
  CHECK(scoreHf["semantics"] == "huggingface");
  CHECK(scoreHf["initial_memory"] == "zeros");
  CHECK(scoreHf["tokens"].get<int>() > 50);
  CHECK(scoreHf["nll_sum"] == scoreOut["nll_sum"]);

  const std::vector<std::string> run = {"--tokens", "1 2 3 4 5 6 7 8 9 10 11; 12 13 14 15 16 17 18 19 20 21 22",
                                        "--qlen", "4"};
  std::vector<std::string> a{"run", "hf"}, b{"run", "out"};
  a.insert(a.end(), run.begin(), run.end());
  b.insert(b.end(), run.begin(), run.end());
  const auto runHf = runJson(a, dir), runOut = runJson(b, dir);
  CHECK(runHf["hidden"] == runOut["hidden"]);
  CHECK(runHf["logprob"] == runOut["logprob"]);
  CHECK(runHf["mlen_in"] == 6);  // Hugging Face's zero memory: mem_len rows from the first segment on
  fs::remove_all(dir);
}

TEST_CASE("txlc import refuses a destination that exists and is not empty, and leaves it alone", "[robustness][cli]") {
  const std::string dir = txl::test::makeTempDir("txlc-import");
  fs::create_directory(dir + "/out");
  std::ofstream(dir + "/out/keep.txt") << "mine\n";
  auto r = runProcess({kTxlc, "import", kCheckpoints + "/hf_tiny", "-o", "out"}, dir, kTimeout);
  CHECK(r.exitCode == 3);
  CHECK(r.err == "txlc: error: out: exists; expected a new folder name or an empty folder\n");
  CHECK(readFile(dir + "/out/keep.txt") == "mine\n");
  CHECK(std::distance(fs::directory_iterator(dir), fs::directory_iterator()) == 1);  // no temporary left
  fs::remove_all(dir);
}

TEST_CASE("hostile checkpoints: one line, exit 3, nothing written, nothing run", "[robustness][cli]") {
  const std::string dir = txl::test::makeTempDir("txlc-import");
  std::ofstream(dir + "/x.txt") << "<eos>\n";
  for (const auto& entry : fs::directory_iterator(kCheckpoints + "/hostile")) {
    if (entry.path().extension() != ".bin") continue;
    const std::string name = entry.path().stem().string();
    const std::string payload = "/tmp/PWNED_" + name;
    fs::remove(payload);
    for (const auto& args : std::vector<std::vector<std::string>>{
             {kTxlc, "import", entry.path().string(), "--spec", kCheckpoints + "/hf_tiny/config.json", "-o", "out"},
             {kTxlc, "score", kCheckpoints + "/hf_tiny/config.json", "--weights", entry.path().string(), "x.txt"}}) {
      auto r = runProcess(args, dir, kTimeout);
      INFO(name << " " << args[1] << ": " << r.err);
      CHECK(r.exitCode == 3);
      REQUIRE(!r.err.empty());
      CHECK(r.err.find('\n') == r.err.size() - 1);
      CHECK(r.err.find(entry.path().filename().string()) != std::string::npos);
      CHECK(r.out.empty());
      CHECK_FALSE(fs::exists(dir + "/out"));
      CHECK_FALSE(fs::exists(payload));
    }
  }
  fs::remove_all(dir);
}
