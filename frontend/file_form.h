// frontend/file_form.h - what a file is, told from its first bytes.
//
// MODEL, --spec and FILE arguments are recognized by content, never by their
// extension: a zip archive ("PK\3\4", torch.save's format), a pickle (0x80 and
// a protocol byte: the legacy torch.save format or a plain pickle such as
// vocab.pkl), a safetensors file (an 8-byte header length, then '{'), a txlc
// artifact ("TXLCART\0"), an ELF executable, JSON ('{' after whitespace),
// text, or other binary data. A file in the wrong place is named for what it
// is in one line (notModelMessage).
//
//   if (sniffFile(path) == FileForm::Safetensors) ...
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace txl::frontend {

enum class FileForm {
  Unreadable,  // missing, not a regular file, or cannot be opened
  Empty,
  Json,         // first non-whitespace byte '{' or '['
  TorchZip,     // "PK\3\4": torch.save's zip format
  Pickle,       // 0x80 and a protocol byte 2..5 (the legacy torch.save format starts so too)
  Safetensors,  // u64 header length, then '{'
  Artifact,     // "TXLCART\0"
  Executable,   // "\x7fELF"
  Text,         // no NUL byte in the first 4 KiB
  Binary,
};

FileForm sniffFile(const std::string& path);
// The same from a file's first bytes (up to 4 KiB); `fileSize` bounds a safetensors header.
FileForm sniffBytes(std::string_view bytes, std::uint64_t fileSize);

// "a PyTorch checkpoint (zip)", "a compiled txlc artifact", "a text file", ...
// A pickle is read to tell a vocabulary pickle from one without a model.
std::string describeFile(const std::string& path, FileForm form);

// One line for a file given as MODEL that is none of the model forms:
// "PATH: a vocabulary pickle (Hugging Face's vocab.pkl), not a model; give
// the folder that holds it with config.json and pytorch_model.bin".
// `expected` replaces the list of model forms (import takes checkpoints only).
std::string notModelMessage(const std::string& path, FileForm form, const std::string& expected = "");

// One line for a file given as a spec (a spec file MODEL with --weights,
// --spec) that is not JSON.
std::string notSpecMessage(const std::string& path, FileForm form);

// For bytes read as text (a FILE to score): "SOURCE: a compiled txlc
// artifact, not text (MODEL comes before FILE)" when they start like one of
// the model forms; empty otherwise.
std::string notTextMessage(const std::string& source, std::string_view bytes);

}  // namespace txl::frontend
