// frontend/checkpoint_model.cpp - readCheckpointModel(), writeImportedModel().
#include "frontend/checkpoint_model.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <system_error>

#include "frontend/atomic_file.h"
#include "frontend/file_form.h"
#include "frontend/torch_checkpoint.h"
#include "frontend/input_file.h"
#include "ir/check.h"

namespace txl::frontend {

namespace fs = std::filesystem;

namespace {

std::string readText(const std::string& path, std::size_t limit) { return readInputFile(path, limit, "a text file"); }

// A symbol vocab.txt can hold: one whitespace-free field per line.
void checkSymbol(const std::string& s, std::size_t id, const std::string& source) {
  if (s.empty()) throw Error(source + ": symbol " + std::to_string(id) + " is empty; vocab.txt cannot hold it");
  for (char c : s)
    if (c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f')
      throw Error(source + ": symbol " + std::to_string(id) +
                  " contains whitespace; vocab.txt (one symbol per line) cannot hold it");
}

std::vector<std::string> readVocabularyFile(const std::string& path) {
  if (fs::path(path).extension() == ".pkl") return readVocabularyPickle(path);
  std::vector<std::string> symbols;
  std::istringstream lines(readText(path, std::size_t{256} << 20));
  for (std::string line; std::getline(lines, line);) {
    const auto b = line.find_first_not_of(" \t\r\v\f");
    if (b == std::string::npos)
      throw Error(path + ": line " + std::to_string(symbols.size() + 1) + ": expected a symbol, got an empty line");
    symbols.push_back(line.substr(b, line.find_first_of(" \t\r\v\f", b) - b));
  }
  return symbols;
}

void writeWhole(const std::string& path, const std::string& text) {
  AtomicFile f(path, 0644);
  f.write(text.data(), text.size());
  f.commit();
}

}  // namespace

bool isTorchCheckpointFile(const std::string& path) {
  unsigned char head[4] = {};
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);  // a FIFO must not block here
  if (fd < 0) return false;
  struct stat st {};
  const bool read4 = ::fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && ::read(fd, head, 4) == 4;
  ::close(fd);
  if (!read4) return false;
  const bool zip = head[0] == 'P' && head[1] == 'K' && head[2] == 3 && head[3] == 4;
  const bool legacy = head[0] == 0x80 && head[1] == 0x02 && head[2] == 0x8a && head[3] == 0x0a;  // PROTO 2, LONG1 10
  return zip || legacy;
}

std::string checkpointFileIn(const std::string& dir) {
  const fs::path d(dir);
  if (isFile(d / "pytorch_model.bin")) return (d / "pytorch_model.bin").string();
  std::vector<std::string> found;
  std::error_code ec;
  for (fs::directory_iterator it(d, ec), end; !ec && it != end; it.increment(ec)) {
    const fs::path& p = it->path();
    if ((p.extension() == ".bin" || p.extension() == ".pt" || p.extension() == ".pth") && isFile(p))
      found.push_back(p.string());
  }
  if (ec) throw Error(dir + ": cannot list: " + ec.message());
  std::sort(found.begin(), found.end());
  if (found.size() > 1) {
    std::string list;
    for (const auto& f : found) list += (list.empty() ? "" : ", ") + fs::path(f).filename().string();
    throw Error(dir + ": " + std::to_string(found.size()) + " checkpoint files (" + list +
                "); expected pytorch_model.bin or exactly one *.bin / *.pt file");
  }
  return found.empty() ? std::string() : found.front();
}

CheckpointModel readCheckpointModel(const std::string& src, const std::optional<std::string>& specPath) {
  CheckpointModel m;
  m.source = src;
  std::error_code ec;
  const fs::file_status st = fs::status(src, ec);
  if (ec || !fs::exists(st)) throw Error(src + ": no such file or directory");

  std::string checkpoint, config, vocabPkl, vocabTxt;
  if (fs::is_directory(st)) {
    checkpoint = checkpointFileIn(src);
    if (checkpoint.empty())
      throw Error(src + ": no PyTorch checkpoint (expected pytorch_model.bin, or one *.bin / *.pt file)");
    if (isFile(fs::path(src) / "config.json")) config = (fs::path(src) / "config.json").string();
    if (isFile(fs::path(src) / "vocab.pkl")) vocabPkl = (fs::path(src) / "vocab.pkl").string();
    if (isFile(fs::path(src) / "vocab.txt")) vocabTxt = (fs::path(src) / "vocab.txt").string();
  } else if (fs::is_regular_file(st)) {
    const FileForm form = sniffFile(src);
    if (form != FileForm::TorchZip && !isTorchCheckpointFile(src))
      throw Error(
          notModelMessage(src, form, "expected a PyTorch checkpoint (.bin, .pt) or a Hugging Face model folder"));
    checkpoint = src;
    const fs::path beside = fs::path(src).parent_path() / "config.json";
    if (isFile(beside)) config = beside.string();
  } else {
    throw Error(src + ": not a regular file or directory");
  }
  if (specPath) {
    config = *specPath;
    if (const FileForm form = sniffFile(config);
        form != FileForm::Json && form != FileForm::Text && form != FileForm::Unreadable && form != FileForm::Empty)
      throw Error(notSpecMessage(config, form));
  }

  TorchCheckpoint ckpt;
  try {
    ckpt = readTorchCheckpoint(checkpoint);
  } catch (const Error&) {
    // The hub's vocab.pkl can be a legacy torch.save file too: name it, not its first field.
    if (sniffFile(checkpoint) == FileForm::Pickle &&
        describeFile(checkpoint, FileForm::Pickle).starts_with("a vocabulary"))
      throw Error(notModelMessage(checkpoint, FileForm::Pickle));
    throw;
  }
  if (!config.empty()) {
    m.configText = readText(config, std::size_t{16} << 20);
    m.configSource = config;
    m.spec = parseModelSpec(parseJsonText(m.configText, config), config);
  } else if (!ckpt.moduleClass.empty()) {
    const nlohmann::json spec = authorsModelSpec(ckpt);
    m.configText = spec.dump(2) + "\n";
    m.configSource = checkpoint + ": the pickled " + ckpt.moduleClass + "'s attributes";
    m.spec = parseModelSpec(spec, m.configSource);
  } else {
    throw Error(checkpoint +
                ": a state dict carries no hyperparameters; pass --spec SPEC (a Hugging Face "
                "config.json or a reference-style spec), or put config.json beside it");
  }

  std::map<std::string, int> widened;
  // A tie is a note each; a checkpoint with more (a hostile one: a storage
  // shared by thousands of names) gets one note with their count.
  constexpr std::size_t kTieNotes = 8;
  std::size_t ties = 0;
  const CheckpointTensor* firstTie = nullptr;
  for (const CheckpointTensor& t : ckpt.tensors)
    if (!t.tiedTo.empty() && ties++ == 0) firstTie = &t;
  if (ties > kTieNotes)
    m.notes.push_back(checkpoint + ": " + std::to_string(ties) +
                      " tensors share their storage with an earlier one (tied weights), each stored once; the first: " +
                      quote(firstTie->name) + " with " + quote(firstTie->tiedTo));
  for (const CheckpointTensor& t : ckpt.tensors) {
    if (!t.tiedTo.empty()) {
      if (ties <= kTieNotes)
        m.notes.push_back(checkpoint + ": \"" + t.name + "\" shares its storage with \"" + t.tiedTo +
                          "\" (a tied weight): stored once");
      continue;
    }
    if (t.storedDType != "F32") ++widened[t.storedDType];
    m.tensors.emplace_back(t.name, t.tensor);
  }
  for (const auto& [dtype, n] : widened)
    m.notes.push_back(checkpoint + ": " + std::to_string(n) + " " + dtype + " tensor" + (n == 1 ? "" : "s") +
                      " widened to F32 (exactly)");

  if (!vocabPkl.empty()) {
    VocabularyPickle pkl = readVocabularyPickleWithOptions(vocabPkl);
    m.vocabulary = std::move(pkl.symbols);
    m.tokenizer = tokenizerConfigBeside(vocabPkl);  // transformers: the constructor's arguments win
    if (!m.tokenizer) m.tokenizer = std::move(pkl.tokenizer);
    m.vocabularySource = vocabPkl;
    if (!vocabTxt.empty()) {
      const auto txt = readVocabularyFile(vocabTxt);
      if (txt != m.vocabulary) throw Error(src + ": vocab.pkl and vocab.txt hold different vocabularies; remove one");
    }
  } else if (!vocabTxt.empty()) {
    m.vocabulary = readVocabularyFile(vocabTxt);
    m.vocabularySource = vocabTxt;
    m.tokenizer = tokenizerConfigBeside(vocabTxt);
  }
  if (!m.vocabulary.empty() && std::int64_t(m.vocabulary.size()) != m.spec.n_token)
    throw Error(m.vocabularySource + ": " + std::to_string(m.vocabulary.size()) +
                " symbols, expected the model's n_token (" + std::to_string(m.spec.n_token) + ")");
  for (std::size_t i = 0; i < m.vocabulary.size(); ++i) checkSymbol(m.vocabulary[i], i, m.vocabularySource);
  return m;
}

CheckpointSource tensorSource(const CheckpointModel& m) { return CheckpointSource(m.source, m.tensors); }

void writeImportedModel(const CheckpointModel& m, const std::string& dir) {
  std::error_code ec;
  const fs::path out = fs::absolute(fs::path(dir), ec).lexically_normal();
  if (ec) throw Error(dir + ": " + ec.message());
  if (fs::exists(fs::symlink_status(out, ec))) {
    if (!fs::is_directory(fs::symlink_status(out, ec)) || !fs::is_empty(out, ec))
      throw Error(dir + ": exists; expected a new folder name or an empty folder");
  }
  const fs::path parent = out.has_filename() ? out.parent_path() : out.parent_path().parent_path();
  if (!fs::is_directory(parent, ec)) throw Error(dir + ": the folder " + parent.string() + " does not exist");

  // An exclusive folder with an unpredictable name; it and the files written
  // into it are removed on an error or a signal.
  const TemporaryDirectory made = makeTemporaryDirectory((parent / out.filename()).string());
  const fs::path tmp = made.path;
  std::vector<int> registered = {made.slot};
  struct Release {
    std::vector<int>& slots;
    ~Release() {
      for (int s : slots) releaseTemporary(s);
    }
  } release{registered};
  try {
    // Each file is registered before it is written: the folder is ours, so
    // the name is too, and a signal at any point removes what exists of it.
    registered.push_back(registerTemporary((tmp / "config.json").string(), false));
    writeWhole((tmp / "config.json").string(), m.configText);
    registered.push_back(registerTemporary((tmp / "model.safetensors").string(), false));
    writeSafetensors((tmp / "model.safetensors").string(), m.tensors, {{"format", "pt"}});
    if (!m.vocabulary.empty()) {
      std::string text;
      for (const auto& s : m.vocabulary) text += s + "\n";
      registered.push_back(registerTemporary((tmp / "vocab.txt").string(), false));
      writeWhole((tmp / "vocab.txt").string(), text);
      if (m.tokenizer) {
        registered.push_back(registerTemporary((tmp / "tokenizer_config.json").string(), false));
        writeWhole((tmp / "tokenizer_config.json").string(), m.tokenizer->toTokenizerConfig().dump(2) + "\n");
      }
    }
    // An empty destination folder is replaced; anything else was refused above.
    if (fs::exists(out, ec)) fs::remove(out, ec);
    if (std::rename(tmp.c_str(), out.c_str()) != 0)
      throw Error(dir + ": cannot rename " + tmp.string() + " into place: " + std::strerror(errno));
    const int fd = ::open(parent.c_str(), O_RDONLY | O_DIRECTORY);
    if (fd >= 0) {
      ::fsync(fd);
      ::close(fd);
    }
  } catch (...) {
    fs::remove_all(tmp, ec);
    throw;
  }
}

}  // namespace txl::frontend
