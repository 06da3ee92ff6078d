// tools/cli_checks.cpp - validators and shared command helpers.
#include "tools/cli_checks.h"

#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <cmath>

#include "driver/compile.h"
#include "driver/model.h"
#include "ir/check.h"

namespace txl::tools {

CLI::Validator batchCheck() { return integerIn(1, driver::kMaxBatch, "a positive integer"); }
CLI::Validator qlenCheck() { return integerIn(1, driver::kMaxLength, "a positive integer"); }
CLI::Validator memLenCheck() { return integerIn(0, driver::kMaxLength, "a non-negative integer"); }
CLI::Validator clampLenCheck() {
  return integerIn(-1, driver::kMaxLength, "-1 (no clamping) or a non-negative integer");  // the setting's range
}

CLI::Validator integerIn(std::int64_t min, std::int64_t max, const std::string& what) {
  return CLI::Validator(
      [=](std::string& s) -> std::string {
        std::int64_t v = 0;
        auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
        const bool digits = p == s.data() + s.size() && !s.empty() && s[0] != '-';
        // A well-formed count beyond the bound: say the bound (unless `what` already does).
        if (digits && (ec == std::errc::result_out_of_range || (ec == std::errc() && v > max)) &&
            what.find('[') == std::string::npos)
          return "expected " + what + " at most " + std::to_string(max) + ", got '" + clip(s) + "'";
        if (ec != std::errc() || p != s.data() + s.size() || v < min || v > max)
          return "expected " + what + ", got '" + clip(s) + "'";
        return {};
      },
      what == "a positive integer" ? "POSITIVE" : "INT");
}

CLI::Validator nonEmptyPath() {
  return CLI::Validator([](std::string& s) -> std::string { return s.empty() ? "expected a path, got ''" : ""; },
                        "PATH");
}

CLI::Validator oneOf(std::vector<std::string> values, const std::string& what) {
  // Named by the set ("{text,json,dot}"), which `txlc completion` offers;
  // the help shows NAME.
  std::string set;
  for (const std::string& v : values) set += (set.empty() ? "{" : ",") + v;
  return CLI::Validator(
             [=](std::string& s) -> std::string {
               for (const std::string& v : values)
                 if (s == v) return {};
               return "expected " + what + ", got '" + clip(s) + "'";
             },
             "NAME")
      .name(set + "}");
}

CLI::Validator realIn(double min, double max, bool openMin, const std::string& what) {
  return CLI::Validator(
      [=](std::string& s) -> std::string {
        char* end = nullptr;
        double v = std::strtod(s.c_str(), &end);
        if (s.empty() || end != s.c_str() + s.size() || !std::isfinite(v) || v > max || v < min ||
            (openMin && v == min))
          return "expected " + what + ", got '" + clip(s) + "'";
        return {};
      },
      "NUMBER");
}

std::string closestName(const std::string& word, const std::vector<std::string>& candidates) {
  std::string best;
  std::size_t bestDistance = 3;
  for (const std::string& c : candidates) {
    // Levenshtein distance, one row at a time.
    std::vector<std::size_t> row(c.size() + 1);
    for (std::size_t j = 0; j <= c.size(); ++j) row[j] = j;
    for (std::size_t i = 1; i <= word.size(); ++i) {
      std::size_t diagonal = row[0];
      row[0] = i;
      for (std::size_t j = 1; j <= c.size(); ++j) {
        const std::size_t up = row[j];
        row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (word[i - 1] == c[j - 1] ? 0 : 1)});
        diagonal = up;
      }
    }
    const std::size_t d = row[c.size()];
    if (d < bestDistance && 2 * d < word.size()) bestDistance = d, best = c;
  }
  return best;
}

namespace {

// Other tools' spellings (llama.cpp, transformers, trtexec) that txlc does
// not take as aliases, because they mean something else there, and the txlc
// flag to use. Checked before the edit-distance suggestion.
struct PeerFlag {
  const char* name;
  const char* txlcFlag;  // suggested when the command has it
  const char* note;      // why, or where the flag is when the command lacks it
};
constexpr PeerFlag kPeerFlags[] = {
    {"--batch-size", "--batch",
     "txlc's --batch is the number of independent streams; --qlen is the tokens per segment"},
    {"-b", "--batch", "txlc's --batch is the number of independent streams; --qlen is the tokens per segment"},
    {"--ctx-size", "--mem-len", "txlc's context is --qlen tokens per segment and --mem-len positions of memory"},
    {"-c", "--mem-len", "txlc's context is --qlen tokens per segment and --mem-len positions of memory"},
    {"--temp", "--temperature", "--temperature is a flag of 'generate'"},
    {"--temperature", "--temperature", "--temperature is a flag of 'generate'"},
    {"--n-predict", "-n", "-n is a flag of 'generate'"},
    {"--max-new-tokens", "-n", "-n is a flag of 'generate'"},
    {"-n", "-n", "-n is a flag of 'generate'"},
    {"-p", "--prompt", "--prompt is a flag of 'generate'"},
    {"--prompt", "--prompt", "--prompt is a flag of 'generate'"},
    {"-f", "--file", "generate takes its prompt as --prompt TEXT (--prompt \"$(cat FILE)\"); score takes FILE"},
    {"--file", "--file", "generate takes its prompt as --prompt TEXT (--prompt \"$(cat FILE)\"); score takes FILE"},
    {"--threads", "--threads", "this command runs no model"},
    {"-t", "--threads", "this command runs no model"},
};

}  // namespace

std::string unknownFlagMessage(const CLI::App& cmd, int first, int argc, char** argv) {
  std::vector<std::string> known;
  for (const CLI::Option* opt : cmd.get_options()) {
    for (const std::string& n : opt->get_lnames()) known.push_back("--" + n);
    for (const std::string& n : opt->get_snames()) known.push_back("-" + n);
  }
  for (int i = first; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--") break;
    if (arg.size() < 2 || arg[0] != '-') continue;
    double number = 0;
    if (std::from_chars(arg.data(), arg.data() + arg.size(), number).ptr == arg.data() + arg.size())
      continue;  // a negative value, not a flag
    const std::string name = arg.substr(0, arg.find('='));
    if (std::find(known.begin(), known.end(), name) != known.end()) continue;
    if (arg[1] != '-' && arg.size() > 2) continue;  // -abc: CLI11 reads grouped short flags
    for (const PeerFlag& peer : kPeerFlags) {
      if (name != peer.name) continue;
      const bool has = std::find(known.begin(), known.end(), peer.txlcFlag) != known.end();
      return "unknown flag '" + clip(name) + "' for '" + cmd.get_name() + "'; " +
             (has ? "did you mean " + std::string(peer.txlcFlag) + "? (" + peer.note + ")" : std::string(peer.note));
    }
    const std::string near = closestName(name, known);
    return "unknown flag '" + clip(name) + "' for '" + cmd.get_name() + "'" +
           (near.empty() ? std::string() : "; did you mean " + near + "?");
  }
  return "";
}

void addModelArgument(CLI::App& cmd, std::string& model, const std::string& help) {
  if (driver::embeddedArtifact()) {
    model = driver::kEmbeddedModelPath;
    return;
  }
  cmd.add_option("model", model, help)->required();  // -m/--model MODEL: moved into place by main()
}

bool stderrIsTerminal() { return ::isatty(2) == 1; }

}  // namespace txl::tools
