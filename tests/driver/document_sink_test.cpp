// tests/driver/document_sink_test.cpp - a document job's output: FILE.partial while running, FILE whole at
// the end, FILE untouched by a stopped run, and no write through a symlink planted at FILE.partial.
#include <catch2/catch.hpp>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "driver/document_sink.h"
#include "driver/text_source.h"
#include "ir/check.h"

using namespace txl;
using namespace txl::driver;
namespace fs = std::filesystem;

namespace {

fs::path freshDir(const std::string& name) {
  const fs::path d = fs::temp_directory_path() / ("txlc-sink-" + name + "-" + std::to_string(::getpid()));
  fs::remove_all(d);
  fs::create_directories(d);
  return d;
}

}  // namespace

TEST_CASE("a committed sink writes FILE with the kept lines first and removes FILE.partial") {
  const fs::path d = freshDir("commit");
  const std::string out = (d / "out.jsonl").string();
  {
    DocumentSink sink(out, "{\"id\":1}\n", nullptr);
    sink.line("{\"id\":2}");
    sink.flush();
    CHECK(readTextFile(out + ".partial") == "{\"id\":1}\n{\"id\":2}\n");
    CHECK_FALSE(fs::exists(out));
    sink.line("{\"id\":3}");
    sink.commit();
  }
  CHECK(readTextFile(out) == "{\"id\":1}\n{\"id\":2}\n{\"id\":3}\n");
  CHECK_FALSE(fs::exists(out + ".partial"));
  fs::remove_all(d);
}

TEST_CASE("does not touch FILE when the run stops midway") {
  const fs::path d = freshDir("stop");
  const std::string out = (d / "out.jsonl").string();
  {
    std::ofstream(out) << "earlier\n";
    DocumentSink sink(out, "", nullptr);
    sink.line("{\"id\":1}");
    sink.stop();
    CHECK(sink.partialPath() == out + ".partial");
  }
  CHECK(readTextFile(out) == "earlier\n");
  CHECK(readTextFile(out + ".partial") == "{\"id\":1}\n");
  fs::remove_all(d);
}

TEST_CASE("does not write through a symlink planted at FILE.partial") {
  const fs::path d = freshDir("symlink");
  const std::string out = (d / "out.jsonl").string();
  std::ofstream(d / "victim") << "keep\n";
  fs::create_symlink(d / "victim", out + ".partial");
  CHECK_THROWS_AS(DocumentSink(out, "", nullptr), Error);
  CHECK(readTextFile((d / "victim").string()) == "keep\n");
  fs::remove_all(d);
}

TEST_CASE("without a file the lines go to the stream as they are flushed") {
  std::ostringstream s;
  DocumentSink sink("", "", &s);
  sink.line("a");
  CHECK(s.str().empty());
  sink.flush();
  CHECK(s.str() == "a\n");
  sink.commit();
  CHECK(s.str() == "a\n");
}

TEST_CASE("FILE belongs to one run: a second sink on it is refused before anything is read or truncated") {
  const fs::path d = freshDir("lock");
  const std::string out = (d / "out.jsonl").string();
  std::ofstream(out + ".partial") << "{\"id\":1}\n";
  DocumentSink first(out, nullptr);
  CHECK(first.earlier() == "{\"id\":1}\n");
  CHECK_THROWS_WITH(DocumentSink(out, nullptr), Catch::Contains("found it locked by another run"));
  CHECK(readTextFile(out + ".partial") == "{\"id\":1}\n");
  fs::remove_all(d);
}

TEST_CASE("commit renames only the file the run wrote") {
  const fs::path d = freshDir("replaced");
  const std::string out = (d / "out.jsonl").string();
  DocumentSink sink(out, "", nullptr);
  sink.line("{\"id\":1}");
  sink.flush();
  std::ofstream(d / "planted") << "planted\n";
  fs::rename(d / "planted", out + ".partial");
  CHECK_THROWS_WITH(sink.commit(),
                    Catch::Contains("expected the file this run wrote, found another file in its place"));
  CHECK_FALSE(fs::exists(out));
  CHECK(readTextFile(out + ".partial") == "planted\n");
  fs::remove_all(d);
}

TEST_CASE("the output limit fails the flush that would pass it, not the commit") {
  const fs::path d = freshDir("limit");
  const std::string out = (d / "out.jsonl").string();
  DocumentSink sink(out, nullptr, 20);
  sink.start("");
  sink.line("0123456789");
  sink.flush();
  sink.line("0123456789");
  CHECK_THROWS_WITH(sink.flush(), Catch::Contains("the lines would pass 20 bytes"));
  CHECK(readTextFile(out + ".partial") == "0123456789\n");
  fs::remove_all(d);
}

TEST_CASE("a sink that never started leaves no FILE.partial it created") {
  const fs::path d = freshDir("unstarted");
  const std::string out = (d / "out.jsonl").string();
  { DocumentSink sink(out, nullptr); }
  CHECK_FALSE(fs::exists(out + ".partial"));
  std::ofstream(out + ".partial") << "kept\n";
  { DocumentSink sink(out, nullptr); }
  CHECK(readTextFile(out + ".partial") == "kept\n");
  fs::remove_all(d);
}
