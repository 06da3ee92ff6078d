// tools/model_setup.cpp - compileModel() and friends.
#include "tools/model_setup.h"

#include "backend/onednn_executor.h"
#include "backend/reference_interpreter.h"
#include "ir/check.h"

namespace txl::tools {

std::shared_ptr<backend::Executor> makeExecutor(const std::string& name) {
  if (name == "onednn") return backend::makeOnednnExecutor();
  if (name == "reference") return backend::makeReferenceExecutor();
  throw Error("--backend: expected 'onednn' or 'reference', got '" + name + "'");
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
                              ir::PassContext* ctx) {
  ir::Graph g = frontend::buildSegmentGraph(spec, shape, outputs);
  ir::PassContext local;
  passes::runPipeline(g, pipeline, ctx ? *ctx : local);
  return g;
}

std::shared_ptr<backend::CompiledModel> compileModel(const frontend::ModelSpec& spec, ir::TensorMap weights,
                                                     const RunSettings& settings, const ModelOptions& options) {
  frontend::SegmentShape base = segmentShape(spec, settings);
  if (base.memLen < 0) throw Error("--mem-len: expected a non-negative integer, got " + std::to_string(base.memLen));
  if (base.sameLength && base.memLen == 0) throw Error("--same-length needs a mem_len above 0");
  backend::ModelInfo info{spec.n_layer, spec.d_model, spec.n_token, base.memLen, settings.batch};
  passes::PipelineOptions pipeline = options.pipeline;
  passes::selectedPasses(pipeline);  // validates the names now, not at the first segment
  auto factory = [spec, base, pipeline](std::int64_t qlen, std::int64_t mlen, backend::SegmentOutputs outputs) {
    frontend::SegmentShape shape = base;
    shape.qlen = qlen;
    shape.mlen = mlen;
    return buildOptimizedGraph(spec, shape, {outputs.logprob, outputs.nll}, pipeline);
  };
  return std::make_shared<backend::CompiledModel>(info, std::move(weights), makeExecutor(options.backend), factory);
}

}  // namespace txl::tools
