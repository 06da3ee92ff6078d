// Packed weights: one copy per model, shared by live plans; the plain pages
// of file-backed weights dropped once only the packed copy is read.
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <cstdlib>
#include <string>
#include <vector>

#include "backend/onednn/onednn_executor.h"
#include "backend/onednn/packed_weights.h"
#include "backend/reference/reference_interpreter.h"
#include "ir/parser.h"

using namespace txl;
using backend::onednn::PackedWeights;
using dnnl::memory;

namespace {

// A read-only private mapping of a temporary file holding `values`, viewed as f32[rows, cols].
struct MappedFile {
  std::shared_ptr<void> map;
  ir::Tensor tensor;
};
MappedFile mappedTensor(std::int64_t rows, std::int64_t cols) {
  char path[] = "/tmp/txlc-packed-XXXXXX";
  const int fd = ::mkstemp(path);
  REQUIRE(fd >= 0);
  std::vector<float> values(std::size_t(rows * cols));
  for (std::size_t i = 0; i < values.size(); ++i) values[i] = float(i % 97) - 48.0f;
  REQUIRE(::write(fd, values.data(), values.size() * 4) == ssize_t(values.size() * 4));
  const std::size_t size = values.size() * 4;
  void* p = ::mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0);
  ::close(fd);
  ::unlink(path);
  REQUIRE(p != MAP_FAILED);
  MappedFile f;
  f.map = std::shared_ptr<void>(p, [size](void* q) { ::munmap(q, size); });
  f.tensor = ir::Tensor::fileView({ir::DType::F32, {rows, cols}}, p, f.map);
  return f;
}

// Pages of the tensor's mapping resident in this process (its Rss in
// /proc/self/smaps; mincore would count the file's page cache instead).
// A field of /proc/self/status in bytes ("VmHWM", "VmRSS").
std::size_t statusBytes(const std::string& key) {
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line))
    if (line.rfind(key + ":", 0) == 0) return std::size_t(std::stoull(line.substr(key.size() + 1))) * 1024;
  return 0;
}

// Resets VmHWM to the current resident set; false where the kernel refuses.
bool resetPeakResident() {
  std::ofstream out("/proc/self/clear_refs");
  out << "5";
  out.flush();
  return bool(out);
}

std::size_t residentPages(const ir::Tensor& t) {
  std::ifstream smaps("/proc/self/smaps");
  const auto start = reinterpret_cast<std::uintptr_t>(t.raw());
  std::string line;
  bool inside = false;
  while (std::getline(smaps, line)) {
    std::uintptr_t lo = 0, hi = 0;
    if (std::sscanf(line.c_str(), "%lx-%lx ", &lo, &hi) == 2) {  // a mapping's first line
      inside = lo <= start && start < hi;
      continue;
    }
    std::size_t kb = 0;
    if (inside && std::sscanf(line.c_str(), "Rss: %zu kB", &kb) == 1)
      return kb * 1024 / std::size_t(::sysconf(_SC_PAGESIZE));
  }
  FAIL("no mapping holds the tensor");
  return 0;
}

float sum(const ir::Tensor& t) {
  float s = 0;
  for (float v : t.span<float>()) s += v;
  return s;
}

}  // namespace

TEST_CASE("packed weights: one copy while a holder lives, a new one after", "[packed]") {
  dnnl::engine eng(dnnl::engine::kind::cpu, 0);
  ir::Tensor w = ir::Tensor::zeros({ir::DType::F32, {64, 32}});
  for (std::int64_t i = 0; i < w.numel(); ++i) w.data<float>()[i] = float(i);
  memory::desc plain({32, 64}, memory::data_type::f32, memory::format_tag::ba);
  memory::desc blocked({32, 64}, memory::data_type::f32, memory::format_tag::BA16a64b);
  PackedWeights packs;
  bool made = false;
  auto a = packs.get(w.raw(), plain, blocked, eng, &made);
  CHECK(made);
  auto b = packs.get(w.raw(), plain, blocked, eng, &made);
  CHECK_FALSE(made);
  CHECK(a == b);
  CHECK(packs.bytes() == blocked.get_size());
  auto c =
      packs.get(w.raw(), plain, memory::desc({32, 64}, memory::data_type::f32, memory::format_tag::ab), eng, &made);
  CHECK(made);  // another layout of the same bytes is another copy
  // The packed copy holds the weight: unpacking gives it back exactly.
  ir::Tensor back = ir::Tensor::zeros(w.type());
  memory to(plain, eng, back.raw());
  dnnl::stream s(eng);
  memory from = a->mem;  // a handle: reorder takes non-const ones
  dnnl::reorder(from, to).execute(s, from, to);
  s.wait();
  CHECK(std::equal(back.span<float>().begin(), back.span<float>().end(), w.span<float>().begin()));
  a.reset();
  b.reset();
  c.reset();
  CHECK(packs.bytes() == 0);
  packs.get(w.raw(), plain, blocked, eng, &made);
  CHECK(made);
}

TEST_CASE("packed weights: plain pages of a file-backed weight are dropped unless read in place", "[packed]") {
  MappedFile f = mappedTensor(512, 512);  // 1 MiB: 256 pages
  const float expected = sum(f.tensor);   // touches every page
  REQUIRE(residentPages(f.tensor) > 200);

  SECTION("packed only: dropped, and still readable (from the file)") {
    PackedWeights packs;
    packs.notePacked(f.tensor, 0, f.tensor.bytes());
    CHECK(residentPages(f.tensor) == 0);
    CHECK(sum(f.tensor) == expected);
    REQUIRE(residentPages(f.tensor) > 200);
    CHECK(packs.releasePlainPages() == f.tensor.bytes());  // a later sweep drops them again
    CHECK(residentPages(f.tensor) == 0);
  }
  auto reader = std::make_shared<int>(0);  // a live plan
  SECTION("read in place too: kept while the reader lives, dropped after") {
    PackedWeights packs;
    packs.notePlainRead(&f.tensor, static_cast<const char*>(f.tensor.raw()) + 4096, 16, reader);
    packs.notePacked(f.tensor, 0, f.tensor.bytes());
    CHECK(packs.releasePlainPages() == 0);
    CHECK(residentPages(f.tensor) > 200);
    reader.reset();
    CHECK(packs.releasePlainPages() == f.tensor.bytes());
    CHECK(residentPages(f.tensor) == 0);
  }
  SECTION("read only by a plan that is gone (constant folding): dropped, without any pack") {
    PackedWeights packs;
    packs.notePlainRead(&f.tensor, f.tensor.raw(), f.tensor.bytes(), reader);
    CHECK(packs.releasePlainPages() == 0);
    reader.reset();
    packs.releasePlainPages();
    CHECK(residentPages(f.tensor) == 0);
    CHECK(sum(f.tensor) == expected);
  }
  SECTION("only the packed rows' pages go") {
    PackedWeights packs;
    const std::size_t half = f.tensor.bytes() / 2;
    packs.notePlainRead(&f.tensor, f.tensor.raw(), half, reader);
    packs.notePacked(f.tensor, half, half);
    const std::size_t resident = residentPages(f.tensor);
    CHECK(resident <= 129);
    CHECK(resident >= 127);
  }
  SECTION("disabled: nothing dropped") {
    PackedWeights packs(false);
    packs.notePacked(f.tensor, 0, f.tensor.bytes());
    CHECK(residentPages(f.tensor) > 200);
  }
}

TEST_CASE("packed weights: memory that is not file-backed is never dropped", "[packed]") {
  ir::Tensor t = ir::Tensor::zeros({ir::DType::F32, {512, 512}});
  t.data<float>()[100000] = 3.0f;
  CHECK(t.dropResidentPages(0, t.bytes()) == 0);
  PackedWeights packs;
  packs.notePacked(t, 0, t.bytes());
  CHECK(packs.releasePlainPages() == 0);
  CHECK(t.data<float>()[100000] == 3.0f);
}

TEST_CASE("packed weights: plans of one executor over a file-backed weight give the plain results", "[packed]") {
  MappedFile f = mappedTensor(256, 128);  // linear weight [out 256, in 128]
  ir::TensorMap weights{{"w", f.tensor}};
  auto exe = backend::makeOnednnExecutor();
  auto reference = backend::makeReferenceExecutor();
  for (std::int64_t m : {1, 7, 64}) {
    const std::string text = "graph @g {\n  %0 = input() {name = \"x\"} : f32[" + std::to_string(m) +
                             ",128]\n  %1 = weight() {name = \"w\"} : f32[256,128]\n  %2 = linear(%0, %1) : f32[" +
                             std::to_string(m) + ",256]\n  output(%2) {name = \"y\"}\n}\n";
    ir::Graph g = ir::parse(text);
    ir::Tensor x = ir::Tensor::zeros({ir::DType::F32, {m, 128}});
    for (std::int64_t i = 0; i < x.numel(); ++i) x.data<float>()[i] = float(i % 13) * 0.25f;
    auto plan = exe->compile(g, weights);
    CHECK(residentPages(f.tensor) == 0);  // the plan reads the packed copy only
    const ir::Tensor y = plan->run({{"x", x}}).at("y");
    const ir::Tensor want = reference->compile(g, weights)->run({{"x", x}}).at("y");
    REQUIRE(y.numel() == want.numel());
    for (std::int64_t i = 0; i < y.numel(); ++i)
      CHECK(y.data<float>()[i] == Approx(want.data<float>()[i]).epsilon(1e-5));
  }
}

TEST_CASE("packed weights: a tied table's lookup does not keep its packed output layer resident", "[packed]") {
  MappedFile f = mappedTensor(4096, 256);  // [vocabulary 4096, d 256], 4 MiB: 1024 pages
  ir::TensorMap weights{{"emb", f.tensor}, {"out", f.tensor}};
  const std::string text = R"(graph @g {
  %0 = input() {name = "tokens"} : i64[8,1]
  %1 = weight() {name = "emb"} : f32[4096,256]
  %2 = embedding(%1, %0) {lo = 0} : f32[8,1,256]
  %3 = weight() {name = "out"} : f32[4096,256]
  %4 = linear(%2, %3) : f32[8,1,4096]
  output(%4) {name = "logits"}
}
)";
  ir::Graph g = ir::parse(text);
  ir::Tensor tokens = ir::Tensor::zeros({ir::DType::I64, {8, 1}});
  for (std::int64_t i = 0; i < 8; ++i) tokens.data<std::int64_t>()[i] = i * 500;
  // Over the size limit for blocked copies too: a file-backed weight is
  // packed anyway, since its plain pages go.
  backend::OnednnOptions options;
  options.maxBlockedWeightBytes = 1024;
  auto plan = backend::makeOnednnExecutor(options)->compile(g, weights);
  // Dropped although the lookup reads the table: it reads the packed rows.
  CHECK(residentPages(f.tensor) == 0);
  const ir::Tensor y = plan->run({{"tokens", tokens}}).at("logits");
  CHECK(residentPages(f.tensor) == 0);
  bool packed = false;
  for (const auto& s : dynamic_cast<backend::OnednnCompiledGraph&>(*plan).steps()) packed |= s.op == "linear";
  CHECK(packed);
  CHECK(dynamic_cast<backend::OnednnCompiledGraph&>(*plan).constantBytes() >= f.tensor.bytes());
  const ir::Tensor want = backend::makeReferenceExecutor()->compile(g, weights)->run({{"tokens", tokens}}).at("logits");
  for (std::int64_t i = 0; i < y.numel(); ++i) CHECK(y.data<float>()[i] == Approx(want.data<float>()[i]).epsilon(1e-5));
}

TEST_CASE("packed weights: a vocabulary-sized table's lookup maps only the rows it reads, while it reads them",
          "[packed]") {
  // 20 MiB, over the size above which lookups unmap their rows. A page fault
  // on the file maps the pages around it too (fault-around), so before the
  // lookup unmapped its rows, 64 tokens kept about a thousand pages mapped.
  const std::int64_t rows = 16384, dim = 320;
  MappedFile f = mappedTensor(rows, dim);
  ir::TensorMap weights{{"emb", f.tensor}, {"out", f.tensor}};
  std::string head =
      "graph @g {\n  %0 = input() {name = \"tokens\"} : i64[64,1]\n"
      "  %1 = weight() {name = \"emb\"} : f32[16384,320]\n"
      "  %2 = embedding(%1, %0) {lo = 0} : f32[64,1,320]\n";
  std::string text;
  SECTION("tied, the output layer at bf16") {
    text = head +
           "  %3 = weight() {name = \"out\"} : f32[16384,320]\n  %4 = convert(%3) {dtype = \"bf16\"} : "
           "bf16[16384,320]\n  %5 = convert(%2) {dtype = \"bf16\"} : bf16[64,1,320]\n"
           "  %6 = linear(%5, %4) {out_dtype = \"f32\"} : f32[64,1,16384]\n  output(%6) {name = \"y\"}\n}\n";
  }
  SECTION("tied, the output layer at int8") {
    text = head +
           "  %3 = weight() {name = \"out\"} : f32[16384,320]\n  %4 = quantize(%3) : f32[16384,320]\n"
           "  %5 = linear(%2, %4) {out_dtype = \"f32\"} : f32[64,1,16384]\n  output(%5) {name = \"y\"}\n}\n";
  }
  SECTION("a lookup alone") { text = head + "  output(%2) {name = \"y\"}\n}\n"; }
  ir::Graph g = ir::parse(text);
  ir::Tensor tokens = ir::Tensor::zeros({ir::DType::I64, {64, 1}});
  for (std::int64_t i = 0; i < 64; ++i) tokens.data<std::int64_t>()[i] = (i * 257) % rows;
  auto plan = backend::makeOnednnExecutor()->compile(g, weights);
  plan->run({{"tokens", tokens}});
  // While it reads: a kernel whose page cache holds large folios maps a
  // whole folio (up to 2 MiB) per fault, so 64 rows faulted before any was
  // unmapped would map up to 128 MiB at once. A row at a time, the peak
  // grows by about one folio.
  const bool peakReset = resetPeakResident();
  const std::size_t before = statusBytes("VmRSS");
  const ir::Tensor y = plan->run({{"tokens", tokens}}).at("y");
  if (peakReset) CHECK(statusBytes("VmHWM") - before < (std::size_t(8) << 20));
  CHECK(residentPages(f.tensor) == 0);
  const ir::Tensor want = backend::makeReferenceExecutor()->compile(g, weights)->run({{"tokens", tokens}}).at("y");
  REQUIRE(y.numel() == want.numel());
  std::int64_t wrong = 0;
  for (std::int64_t i = 0; i < y.numel(); ++i)
    wrong += std::abs(y.data<float>()[i] - want.data<float>()[i]) > 1e-3f * (1 + std::abs(want.data<float>()[i]));
  CHECK(wrong == 0);
}

TEST_CASE("packed weights: rows read back from any packed layout", "[packed]") {
  dnnl::engine eng(dnnl::engine::kind::cpu, 0);
  const std::int64_t n = 70, k = 19;  // [N, K] weight, B = W^T [K, N]; sizes off every block
  ir::Tensor w = ir::Tensor::zeros({ir::DType::F32, {n, k}});
  for (std::int64_t i = 0; i < w.numel(); ++i) w.data<float>()[i] = float(i) * 0.5f - 3.0f;
  const memory::desc plain({k, n}, memory::data_type::f32, memory::format_tag::ba);
  using tag = memory::format_tag;
  for (tag t : {tag::ba, tag::ab, tag::BA16a64b, tag::BA16a32b, tag::AB16b64a, tag::AB4b16a4b}) {
    INFO("layout " << int(t));
    PackedWeights packs;
    auto p = packs.get(w.raw(), plain, memory::desc({k, n}, memory::data_type::f32, t), eng);
    std::vector<float> row(std::size_t(k), -1.0f);
    for (std::int64_t r : {std::int64_t(0), std::int64_t(1), std::int64_t(63), std::int64_t(64), n - 1}) {
      backend::onednn::readPackedRow(*p, r, row.data());
      for (std::int64_t j = 0; j < k; ++j) REQUIRE(row[std::size_t(j)] == w.data<float>()[r * k + j]);
    }
  }
}

TEST_CASE("packed weights: a lookup reads packed rows, plain rows and zeros outside the range", "[packed]") {
  dnnl::engine eng(dnnl::engine::kind::cpu, 0);
  const std::int64_t rows = 100, dim = 24;
  ir::Tensor table = ir::Tensor::zeros({ir::DType::F32, {rows, dim}});
  for (std::int64_t i = 0; i < table.numel(); ++i) table.data<float>()[i] = float(i);
  // Rows [40, 90) packed as a linear weight [50, 24]; the packed copy is then
  // the only right answer: scribble over those plain rows.
  const char* begin = static_cast<const char*>(table.raw()) + 40 * dim * 4;
  PackedWeights packs;
  auto p = packs.get(begin, memory::desc({dim, 50}, memory::data_type::f32, memory::format_tag::ba),
                     memory::desc({dim, 50}, memory::data_type::f32, memory::format_tag::BA16a64b), eng);
  std::vector<backend::onednn::PackedRows> packed{{begin, begin + 50 * dim * 4, std::size_t(dim) * 4, p}};
  std::vector<float> want(std::size_t(6 * dim));
  const std::int64_t ids[] = {5, 45, 89, 90, 3, 200};  // lo 3: table rows 2, 42, 86, 87, 0, out of range
  for (int i = 0; i < 6; ++i)
    for (std::int64_t j = 0; j < dim; ++j)
      want[std::size_t(i * dim + j)] = ids[i] - 3 < rows ? table.data<float>()[(ids[i] - 3) * dim + j] : 0.0f;
  for (std::int64_t r = 40; r < 90; ++r)
    for (std::int64_t j = 0; j < dim; ++j) table.data<float>()[r * dim + j] = -1.0f;
  std::vector<float> got(std::size_t(6 * dim), 7.0f);
  backend::onednn::lookupRows(table.data<float>(), rows, dim, ids, 6, 3, packed, got.data());
  CHECK(got == want);
}

TEST_CASE("packed weights: a large file-backed weight is packed slice by slice, its pages dropped as it goes",
          "[packed]") {
  dnnl::engine eng(dnnl::engine::kind::cpu, 0);
  const std::int64_t n = 40037, k = 128;  // 20.5 MB: more than one 16 MiB slice, a partial last block
  MappedFile f = mappedTensor(n, k);
  const float expected = sum(f.tensor);
  const memory::desc plain({k, n}, memory::data_type::f32, memory::format_tag::ba);
  const memory::desc blocked({k, n}, memory::data_type::f32, memory::format_tag::BA16a64b);
  PackedWeights packs;
  const PackedWeights::Source source{&f.tensor, 0};
  auto p = packs.get(f.tensor.raw(), plain, blocked, eng, nullptr, &source);
  CHECK(residentPages(f.tensor) <= 1);  // the file's last, partial page is never dropped
  CHECK(sum(f.tensor) == expected);     // read back from the file
  std::vector<float> row(static_cast<std::size_t>(k), 0.0f);
  for (std::int64_t r : {std::int64_t(0), std::int64_t(32767), std::int64_t(32768), std::int64_t(40000), n - 1}) {
    backend::onednn::readPackedRow(*p, r, row.data());
    for (std::int64_t j = 0; j < k; ++j) REQUIRE(row[std::size_t(j)] == f.tensor.data<float>()[r * k + j]);
  }
}
