// frontend/file_form.cpp - sniffFile(), describeFile() and the one-line messages built on them.
#include "frontend/file_form.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <filesystem>

#include "frontend/torch_checkpoint.h"
#include "ir/check.h"

namespace txl::frontend {

namespace {

constexpr std::size_t kHead = 4096;

// What the model forms are, for messages.
constexpr const char* kModelForms =
    "expected a model folder, a spec JSON file, a PyTorch checkpoint (.bin, .pt), safetensors weights with "
    "config.json beside them, or a compiled artifact";

bool isVocabularyPickle(const std::string& path) {
  try {
    (void)readVocabularyPickle(path);
    return true;
  } catch (const std::exception&) {
    return false;
  }
}

std::string fileName(const std::string& path) { return std::filesystem::path(path).filename().string(); }

}  // namespace

FileForm sniffBytes(std::string_view bytes, std::uint64_t fileSize) {
  const auto* head = reinterpret_cast<const unsigned char*>(bytes.data());
  const std::size_t n = std::min(bytes.size(), kHead);
  if (n == 0) return FileForm::Empty;
  if (n >= 4 && head[0] == 'P' && head[1] == 'K' && head[2] == 3 && head[3] == 4) return FileForm::TorchZip;
  if (n >= 2 && head[0] == 0x80 && head[1] >= 2 && head[1] <= 5) return FileForm::Pickle;
  if (n >= 8 && std::memcmp(head, "TXLCART\0", 8) == 0) return FileForm::Artifact;
  if (n >= 4 && std::memcmp(head,
                            "\x7f"
                            "ELF",
                            4) == 0)
    return FileForm::Executable;
  if (n >= 9) {
    std::uint64_t len = 0;
    for (int i = 7; i >= 0; --i) len = (len << 8) | head[i];
    if (head[8] == '{' && len >= 2 && len <= fileSize - 8) return FileForm::Safetensors;
  }
  if (std::memchr(head, 0, n) != nullptr) return FileForm::Binary;
  std::size_t i = 0;
  if (n >= 3 && head[0] == 0xEF && head[1] == 0xBB && head[2] == 0xBF) i = 3;  // a UTF-8 byte-order mark
  while (i < n && (head[i] == ' ' || head[i] == '\t' || head[i] == '\n' || head[i] == '\r')) ++i;
  if (i < n && (head[i] == '{' || head[i] == '[')) return FileForm::Json;
  return FileForm::Text;
}

FileForm sniffFile(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);  // a FIFO must not block here
  if (fd < 0) return FileForm::Unreadable;
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    return FileForm::Unreadable;
  }
  char head[kHead];
  std::size_t n = 0;
  while (n < kHead) {
    const ssize_t got = ::read(fd, head + n, kHead - n);
    if (got <= 0) break;
    n += std::size_t(got);
  }
  ::close(fd);
  return sniffBytes(std::string_view(head, n), std::uint64_t(st.st_size));
}

std::string describeFile(const std::string& path, FileForm form) {
  switch (form) {
    case FileForm::Unreadable:
      return "not a readable regular file";
    case FileForm::Empty:
      return "an empty file";
    case FileForm::Json:
      return "a JSON file";
    case FileForm::TorchZip:
      return "a PyTorch checkpoint (zip)";
    case FileForm::Pickle:
      if (isVocabularyPickle(path))
        return "a vocabulary pickle (" +
               std::string(fileName(path) == "vocab.pkl" ? "Hugging Face's vocab.pkl" : "idx2sym") + ")";
      return "a Python pickle that holds no PyTorch model";
    case FileForm::Safetensors:
      return "a safetensors file";
    case FileForm::Artifact:
      return "a compiled txlc artifact";
    case FileForm::Executable:
      return "an executable";
    case FileForm::Text:
      return fileName(path).starts_with("vocab") ? "a text file (a vocabulary)" : "a text file";
    case FileForm::Binary:
      return "a binary file of no form txlc knows";
  }
  return "a file";
}

std::string notModelMessage(const std::string& path, FileForm form, const std::string& expected) {
  const std::string what = describeFile(path, form);
  const std::string forms = expected.empty() ? std::string(kModelForms) : expected;
  if (form == FileForm::Pickle && what.starts_with("a vocabulary"))
    return path + ": " + what +
           ", not a model; give the folder that holds it with config.json and pytorch_model.bin (or pass it as "
           "--vocab FILE)";
  if (form == FileForm::Text && what.ends_with("(a vocabulary)"))
    return path + ": " + what + ", not a model; give the folder that holds it (or pass it as --vocab FILE)";
  if (form == FileForm::Text && expected.empty())
    return path + ": " + what + ", not a model (MODEL comes before FILE); " + forms;
  return path + ": " + what + ", not a model; " + forms;
}

std::string notSpecMessage(const std::string& path, FileForm form) {
  const std::string what = describeFile(path, form);
  if (form == FileForm::Artifact)
    return path + ": " + what +
           ", not a spec JSON file; an artifact holds its spec and weights: give it as MODEL alone";
  if (form == FileForm::TorchZip)
    return path + ": " + what + ", not a spec JSON file; give it as MODEL (its spec from config.json beside it)";
  return path + ": " + what + ", not a spec JSON file (config.json)";
}

}  // namespace txl::frontend

namespace txl::frontend {

std::string notTextMessage(const std::string& source, std::string_view bytes) {
  const FileForm form = sniffBytes(bytes, bytes.size());
  if (form == FileForm::Text || form == FileForm::Json || form == FileForm::Binary || form == FileForm::Empty)
    return {};
  return source + ": " + describeFile(source, form) + ", not text (MODEL comes before FILE)";
}

}  // namespace txl::frontend
