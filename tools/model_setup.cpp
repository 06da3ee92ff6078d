// tools/model_setup.cpp - compileModel() and friends.
#include "tools/model_setup.h"

#include <unistd.h>

#include <cstdio>

#include "backend/onednn_executor.h"
#include "backend/onednn_target_info.h"
#include "backend/reference_interpreter.h"
#include "ir/check.h"

namespace txl::tools {

namespace {

// The executor a --backend name selects.
bool isOnednn(const std::string& name) {
  if (name == "onednn") return true;
  if (name == "reference") return false;
  throw Error("--backend: expected 'onednn' or 'reference', got '" + name + "'");
}

}  // namespace

std::shared_ptr<backend::Executor> makeExecutor(const std::string& name) {
  return isOnednn(name) ? backend::makeOnednnExecutor() : backend::makeReferenceExecutor();
}

const ir::TargetInfo* targetInfo(const std::string& name) {
  static const backend::OnednnTargetInfo onednn;
  return isOnednn(name) ? &onednn : nullptr;
}

frontend::SegmentShape segmentShape(const frontend::ModelSpec& spec, const RunSettings& settings) {
  frontend::SegmentShape shape = frontend::defaultShape(spec, settings.batch, 1, 0);
  if (settings.memLen) shape.memLen = *settings.memLen;
  if (settings.clampLen) shape.clampLen = *settings.clampLen;
  if (settings.sameLength) shape.sameLength = *settings.sameLength;
  return shape;
}

ir::Graph buildOptimizedGraph(const frontend::ModelSpec& spec, const frontend::SegmentShape& shape,
                              const frontend::GraphOutputs& outputs, const passes::PipelineOptions& pipeline,
                              const ir::TargetInfo* target, ir::PassContext* ctx) {
  ir::Graph g = frontend::buildSegmentGraph(spec, shape, outputs);
  ir::PassContext local;
  ir::PassContext& c = ctx ? *ctx : local;
  c.target = target;
  // fold-positions: one table for the longest klen a stream of this model meets.
  if (!c.maxKlen) c.maxKlen = std::max(shape.klen(), shape.memLen + spec.tgt_len);
  passes::runPipeline(g, pipeline, c);
  return g;
}

MemoryEstimate estimateMemory(const frontend::ModelSpec& spec, std::int64_t batch, std::int64_t qlen,
                              std::int64_t memLen) {
  const double b = double(batch), q = double(qlen), m = double(memLen), f32 = 4;
  MemoryEstimate e;
  e.weights = double(spec.parameterCount()) * f32;
  e.state = double(spec.n_layer + 1) * m * b * double(spec.d_model) * f32;
  e.activations = (2 * b * double(spec.n_head) * q * (q + m) + q * b * double(spec.n_token) +
                   q * b * double(spec.d_inner)) * f32;
  return e;
}

void checkMemoryFits(const frontend::ModelSpec& spec, std::int64_t batch, std::int64_t qlen, std::int64_t memLen,
                     const std::string& source) {
  const long pages = ::sysconf(_SC_PHYS_PAGES), pageSize = ::sysconf(_SC_PAGE_SIZE);
  if (pages <= 0 || pageSize <= 0) return;
  const double ram = double(pages) * double(pageSize);
  const MemoryEstimate e = estimateMemory(spec, batch, qlen, memLen);
  if (e.total() <= ram) return;
  auto gib = [](double bytes) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.1f GiB", bytes / double(1 << 30));
    return std::string(buf);
  };
  throw Error(source + ": batch " + std::to_string(batch) + ", qlen " + std::to_string(qlen) + ", mem_len " +
              std::to_string(memLen) + " needs at least " + gib(e.total()) + " (weights " + gib(e.weights) +
              ", memory " + gib(e.state) + ", segment activations " + gib(e.activations) + "); this machine has " +
              gib(ram) + " of RAM");
}

frontend::SegmentShape segmentShape(const frontend::SegmentShape& base, const backend::SegmentKey& key) {
  frontend::SegmentShape shape = base;
  shape.qlen = key.qlen;
  shape.mlen = key.mlen;
  shape.padded = key.padded;
  return shape;
}

std::shared_ptr<backend::CompiledModel> compileModel(const frontend::ModelSpec& spec, ir::TensorMap weights,
                                                     const RunSettings& settings, const ModelOptions& options) {
  frontend::SegmentShape base = segmentShape(spec, settings);
  if (base.memLen < 0) throw Error("--mem-len: expected a non-negative integer, got " + std::to_string(base.memLen));
  if (base.sameLength && base.memLen == 0) throw Error("--same-length needs a mem_len above 0");
  backend::ModelInfo info{spec.n_layer, spec.d_model, spec.n_token, base.memLen, settings.batch,
                          settings.qlen.value_or(spec.tgt_len), spec.attn_type == 0 && base.memLen > 0};
  passes::PipelineOptions pipeline = options.pipeline;
  passes::selectedPasses(pipeline);  // validates the names now, not at the first segment
  const ir::TargetInfo* target = targetInfo(options.backend);
  auto factory = [spec, base, pipeline, target](const backend::SegmentKey& key, ir::ConstantEvaluator* constants) {
    ir::PassContext ctx;
    ctx.constants = constants;
    return buildOptimizedGraph(spec, segmentShape(base, key), {key.outputs.logprob, key.outputs.nll}, pipeline,
                               target, &ctx);
  };
  return std::make_shared<backend::CompiledModel>(info, std::move(weights), makeExecutor(options.backend), factory);
}

}  // namespace txl::tools
