// tests/robustness/concurrency_test.cpp - one CompiledModel shared by sessions on several threads.
//
// Each thread streams its own tokens through its own Session over the same
// CompiledModel (weights, executor, constant cache and graph factory shared).
// The results must be identical, bit for bit, to the same streams run one
// after another on one thread: sharing the model must not leak state between
// streams, and the plans built concurrently must compute what a lone one does.
#include <catch2/catch.hpp>

#include <thread>

#include "backend/session.h"
#include "tests/robustness/model_fixture.h"

using namespace txl;

namespace {

struct StreamResult {
  std::vector<std::string> hidden, logprob, nll;
};

StreamResult runStream(const std::shared_ptr<backend::CompiledModel>& model, const std::vector<ir::Tensor>& tokens,
                       const std::vector<ir::Tensor>& targets) {
  backend::Session session(model);
  StreamResult r;
  for (std::size_t s = 0; s < tokens.size(); ++s) {
    auto out = session.forward(tokens[s], &targets[s]);
    r.hidden.push_back(test::bytesOf(out.hidden));
    r.logprob.push_back(test::bytesOf(out.logprob));
    r.nll.push_back(test::bytesOf(out.nll));
  }
  return r;
}

void checkConcurrentEqualsSequential(const std::string& backendName, bool literal) {
  auto model = test::conformanceModel("tiny_base", backendName, 1, literal);
  const std::int64_t nToken = model->info().nToken;
  constexpr int kThreads = 4, kSegments = 5;
  // Different streams, and different segment lengths per thread, so that the
  // threads build different plans at the same time as well as the same ones.
  std::vector<std::vector<ir::Tensor>> tokens, targets;
  for (int t = 0; t < kThreads; ++t) {
    const std::int64_t qlen = t % 2 ? 6 : 4;
    tokens.push_back(test::tokenStream(100 + t, kSegments, qlen, 1, nToken));
    targets.push_back(test::tokenStream(200 + t, kSegments, qlen, 1, nToken));
  }

  std::vector<StreamResult> sequential;
  for (int t = 0; t < kThreads; ++t) sequential.push_back(runStream(model, tokens[t], targets[t]));

  // A fresh model for the concurrent run, so that its plans and folded
  // constants are built by the racing threads, not reused from above.
  auto shared = test::conformanceModel("tiny_base", backendName, 1, literal);
  std::vector<StreamResult> concurrent(kThreads);
  std::vector<std::string> errors(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&, t] {
      try {
        concurrent[t] = runStream(shared, tokens[t], targets[t]);
      } catch (const std::exception& e) {
        errors[t] = e.what();
      }
    });
  for (auto& th : threads) th.join();

  for (int t = 0; t < kThreads; ++t) {
    INFO("backend " << backendName << ", thread " << t);
    REQUIRE(errors[t].empty());
    REQUIRE(concurrent[t].hidden.size() == std::size_t(kSegments));
    for (int s = 0; s < kSegments; ++s) {
      INFO("segment " << s);
      CHECK(concurrent[t].hidden[s] == sequential[t].hidden[s]);
      CHECK(concurrent[t].logprob[s] == sequential[t].logprob[s]);
      CHECK(concurrent[t].nll[s] == sequential[t].nll[s]);
    }
  }
  // The streams really differ: equal results would also pass a model that ignored its input.
  CHECK(sequential[0].nll[0] != sequential[2].nll[0]);
}

}  // namespace

TEST_CASE("sessions on several threads sharing one model match running them one after another",
          "[robustness][threads]") {
  SECTION("oneDNN executor, default pipeline") { checkConcurrentEqualsSequential("onednn", false); }
  SECTION("oneDNN executor, literal graph") { checkConcurrentEqualsSequential("onednn", true); }
  SECTION("reference interpreter, literal graph") { checkConcurrentEqualsSequential("reference", true); }
}
