// frontend/model_loader.cpp - resolving MODEL [--weights FILE] into a spec and weights.
#include "frontend/model_loader.h"

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <string_view>
#include <system_error>
#include <vector>

#include "frontend/checkpoint_model.h"
#include "frontend/checkpoint_source.h"
#include "frontend/file_form.h"
#include "frontend/input_file.h"
#include "frontend/safetensors.h"
#include "frontend/torch_checkpoint.h"
#include "ir/check.h"

namespace txl::frontend {

namespace fs = std::filesystem;

namespace {

// The safetensors files directly inside `dir`, sorted.
std::vector<std::string> safetensorsIn(const fs::path& dir) {
  std::vector<std::string> found;
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    const fs::path& p = it->path();
    if (p.extension() == ".safetensors" && isFile(p)) found.push_back(p.string());
  }
  if (ec) throw Error(dir.string() + ": cannot list: " + ec.message());
  std::sort(found.begin(), found.end());
  return found;
}

std::string gib(double bytes) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.1f GiB", bytes / static_cast<double>(1 << 30));
  return buf;
}

// Random weights are allocated in full: refuse before allocating what the machine cannot hold.
void checkFitsInRam(const ModelSpec& spec) {
  const long pages = ::sysconf(_SC_PHYS_PAGES), pageSize = ::sysconf(_SC_PAGE_SIZE);
  if (pages <= 0 || pageSize <= 0) return;
  const double ram = static_cast<double>(pages) * static_cast<double>(pageSize);
  const double need = static_cast<double>(spec.parameterCount()) * 4.0;
  if (need > ram)
    throw Error(spec.source + ": random weights need " + gib(need) + " (" + std::to_string(spec.parameterCount()) +
                " f32 parameters); this machine has " + gib(ram) + " of RAM");
}

// The vocabulary file in `dir`: vocab.json or vocab.txt, else Hugging Face's
// pickled vocab.pkl (read without running pickle code); empty when none.
std::string vocabularyIn(const fs::path& dir, const std::string& modelPath) {
  const bool json = isFile(dir / "vocab.json"), txt = isFile(dir / "vocab.txt");
  if (json && txt) throw Error(modelPath + ": both vocab.json and vocab.txt; expected at most one vocabulary file");
  if (json) return (dir / "vocab.json").string();
  if (txt) return (dir / "vocab.txt").string();
  if (isFile(dir / "vocab.pkl")) return (dir / "vocab.pkl").string();
  return {};
}

// A model file besides a spec: a PyTorch checkpoint (its spec from config.json
// beside it or from the pickled module, as `txlc import` reads it) or
// safetensors weights with config.json beside them. The vocabulary is the
// folder's, as for the folder itself.
bool isCheckpointForm(const std::string& path, FileForm form) {
  return form == FileForm::TorchZip || (form == FileForm::Pickle && isTorchCheckpointFile(path));
}

}  // namespace

ModelSpec loadModelFileSpec(const std::string& path) {
  std::error_code ec;
  if (fs::is_directory(path, ec)) return loadModelSpec((fs::path(path) / "config.json").string());
  const FileForm form = sniffFile(path);
  if (form == FileForm::Unreadable || form == FileForm::Json || form == FileForm::Binary) return loadModelSpec(path);
  if (isCheckpointForm(path, form) || form == FileForm::Safetensors) {
    LoadOptions o;
    o.randomWeights = true;  // the spec only: no weights are bound
    o.specOnly = true;
    return loadModel(path, std::nullopt, o).spec;
  }
  throw Error(notModelMessage(path, form));
}

LoadedModel loadModel(const std::string& modelPath, const std::optional<std::string>& weightsPath,
                      const LoadOptions& options) {
  if (weightsPath && options.randomWeights)
    throw Error("--weights " + *weightsPath + " and --random-weights exclude each other; give one");
  std::error_code ec;
  fs::file_status st = fs::status(modelPath, ec);
  if (ec || !fs::exists(st))
    throw Error(modelPath + ": no such file or directory (expected a spec JSON file or a model directory)");

  LoadedModel m;
  std::string weights;
  if (fs::is_directory(st)) {
    const fs::path dir(modelPath);
    m.dir = modelPath;
    const fs::path config = dir / "config.json";
    if (!isFile(config))
      throw Error(modelPath +
                  ": no config.json (a model directory holds config.json, one *.safetensors file or a "
                  "PyTorch checkpoint, and optionally vocab.json, vocab.txt or vocab.pkl)");
    m.spec = loadModelSpec(config.string());
    if (isFile(dir / "model.safetensors.index.json"))
      throw Error(modelPath +
                  ": sharded checkpoints (model.safetensors.index.json) are not supported; merge the "
                  "shards into one safetensors file");
    m.vocabPath = vocabularyIn(dir, modelPath);
    if (weightsPath) {
      weights = *weightsPath;
    } else if (!options.randomWeights) {
      auto found = safetensorsIn(dir);
      if (found.empty()) found.push_back(checkpointFileIn(dir));  // a PyTorch checkpoint, or nothing
      if (found.front().empty())
        throw Error(modelPath +
                    ": no *.safetensors file and no PyTorch checkpoint (pytorch_model.bin); pass "
                    "--weights FILE, or --random-weights");
      if (found.size() > 1) {
        std::string list;
        for (const auto& f : found) list += (list.empty() ? "" : ", ") + fs::path(f).filename().string();
        throw Error(modelPath + ": " + std::to_string(found.size()) + " safetensors files (" + list +
                    "); expected one, or pick one with --weights FILE");
      }
      weights = found.front();
    }
  } else if (fs::is_regular_file(st)) {
    m.dir = fs::path(modelPath).parent_path().string();
    if (m.dir.empty()) m.dir = ".";
    const FileForm form = sniffFile(modelPath);
    if (isCheckpointForm(modelPath, form)) {
      if (weightsPath)
        throw Error("--weights " + *weightsPath + ": " + modelPath +
                    " is a PyTorch checkpoint that holds its weights; give one of them");
      CheckpointModel cm;
      try {
        cm = readCheckpointModel(modelPath, std::nullopt);
      } catch (const Error& e) {
        // import's advice (--spec) is not a flag of the model commands: say what works here.
        if (std::string_view(e.what()).find("a state dict carries no hyperparameters") == std::string_view::npos) throw;
        throw Error(modelPath +
                    ": a state dict carries no hyperparameters; put config.json beside it, or give a spec JSON file "
                    "as MODEL and this file as --weights FILE");
      }
      m.spec = cm.spec;
      m.vocabPath = vocabularyIn(m.dir, modelPath);
      if (options.specOnly) return m;
      if (options.randomWeights) {
        checkFitsInRam(m.spec);
        m.weights = randomWeights(m.spec, options.seed);
      } else {
        m.weights = bindWeights(m.spec, tensorSource(cm), options.bind);
        m.weightsPath = modelPath;
      }
      return m;
    }
    if (form == FileForm::Safetensors) {
      const fs::path config = fs::path(m.dir) / "config.json";
      if (!isFile(config))
        throw Error(modelPath +
                    ": safetensors weights with no config.json beside them; put the spec there, or give a "
                    "spec JSON file as MODEL and these weights as --weights FILE");
      if (weightsPath)
        throw Error("--weights " + *weightsPath + ": " + modelPath + " is a weights file itself; give one of them");
      m.spec = loadModelSpec(config.string());
      m.vocabPath = vocabularyIn(m.dir, modelPath);
      if (!options.randomWeights) weights = modelPath;
    } else if (form == FileForm::Json || form == FileForm::Unreadable || form == FileForm::Binary) {
      // JSON, and what is no known form: the spec reader names what is wrong (size, NUL bytes, syntax).
      m.spec = loadModelSpec(modelPath);
      if (weightsPath) {
        weights = *weightsPath;
      } else if (!options.randomWeights) {
        throw Error(modelPath + ": a spec file needs weights: pass --weights FILE (or --random-weights)");
      }
    } else {
      throw Error(notModelMessage(modelPath, form));
    }
  } else {
    throw Error(modelPath + ": not a regular file or directory");
  }

  if (options.specOnly) return m;
  if (options.randomWeights) {
    checkFitsInRam(m.spec);
    m.weights = randomWeights(m.spec, options.seed);
  } else {
    if (fs::is_directory(weights, ec))
      throw Error(weights + ": is a directory; --weights expects a safetensors file or a PyTorch checkpoint");
    // A file of another known form is named; unknown binary data is left to the safetensors reader.
    if (const FileForm form = sniffFile(weights); form == FileForm::Json || form == FileForm::Text ||
                                                  form == FileForm::Artifact || form == FileForm::Executable ||
                                                  (form == FileForm::Pickle && !isTorchCheckpointFile(weights)))
      throw Error("--weights " + weights + ": " + describeFile(weights, form) +
                  ", not weights; expected a safetensors file or a PyTorch checkpoint");
    if (isTorchCheckpointFile(weights)) {
      // Bound from the reader's tensors: F32 storages view the mapping, the
      // others were widened once; ties are dropped and found by the binder.
      m.weights = bindWeights(m.spec, CheckpointSource(readTorchCheckpoint(weights)), options.bind);
    } else {
      SafetensorsFile file = SafetensorsFile::open(weights);
      m.weights = bindWeights(m.spec, file, options.bind);
    }
    m.weightsPath = weights;
  }
  return m;
}

}  // namespace txl::frontend
