// tests/frontend/model_spec_test.cpp - spec parsing: dialects, defaults, and every error message.
#include <catch2/catch.hpp>

#include <fstream>

#include "frontend/model_spec.h"
#include "ir/check.h"

using namespace txl::frontend;
using nlohmann::json;

namespace {

// The tiny_base conformance config: every key present, reference names.
json tinyBase() {
  return json::parse(R"({"n_token": 97, "n_layer": 2, "n_head": 2, "d_model": 16, "d_head": 8, "d_inner": 32,
    "d_embed": 16, "div_val": 1, "cutoffs": [], "tie_weight": true, "tie_projs": [false], "pre_lnorm": false,
    "tgt_len": 6, "ext_len": 0, "mem_len": 6, "same_length": false, "attn_type": 0, "clamp_len": -1,
    "untie_r": false, "dropout": 0.0, "dropatt": 0.0})");
}

std::string errorOf(const json& j, const std::string& file = "spec.json") {
  try {
    parseModelSpec(j, file);
  } catch (const txl::Error& e) {
    return e.what();
  }
  return "(no error)";
}

std::string errorOfText(const std::string& text) {
  try {
    parseJsonText(text, "spec.json");
  } catch (const txl::Error& e) {
    return e.what();
  }
  return "(no error)";
}

}  // namespace

TEST_CASE("reference spec: all keys read", "[spec]") {
  ModelSpec s = parseModelSpec(tinyBase(), "spec.json");
  CHECK(s.n_token == 97);
  CHECK(s.n_layer == 2);
  CHECK(s.d_embed == 16);
  CHECK(s.tie_projs == std::vector<bool>{false});
  CHECK(s.clamp_len == -1);
  CHECK(s.layer_norm_epsilon == 1e-5);
  CHECK(s.source == "spec.json");
  CHECK(s.warnings.empty());
  CHECK(s.clusterCount() == 1);
  CHECK(s.clusterBounds() == std::vector<std::int64_t>{0, 97});
}

TEST_CASE("reference spec: defaults of optional keys", "[spec]") {
  json j = json::parse(R"({"n_token": 100, "n_layer": 1, "n_head": 2, "d_model": 8, "d_head": 4, "d_inner": 16,
                           "tgt_len": 4, "mem_len": 4})");
  ModelSpec s = parseModelSpec(j, "spec.json");
  CHECK(s.d_embed == 8);
  CHECK(s.div_val == 1);
  CHECK(s.cutoffs.empty());
  CHECK(s.tie_weight);
  CHECK(s.tie_projs == std::vector<bool>{false});
  CHECK_FALSE(s.pre_lnorm);
  CHECK(s.ext_len == 0);
  CHECK_FALSE(s.same_length);
  CHECK(s.attn_type == 0);
  CHECK(s.clamp_len == -1);
  CHECK_FALSE(s.untie_r);
  CHECK(s.layer_norm_epsilon == 1e-5);
  j["d_embed"] = nullptr;  // the reference's d_embed=None
  CHECK(parseModelSpec(j, "spec.json").d_embed == 8);
  j["d_embed"] = -1;  // the reference's train.py default
  CHECK(parseModelSpec(j, "spec.json").d_embed == 8);
}

TEST_CASE("reference spec: unknown keys are warnings, not errors", "[spec]") {
  json j = tinyBase();
  j["same_lenght"] = true;
  ModelSpec s = parseModelSpec(j, "spec.json");
  REQUIRE(s.warnings.size() == 1);
  CHECK(s.warnings[0] == "spec.json: /same_lenght: unknown key, ignored");
}

TEST_CASE("adaptive spec: clusters and embedding widths", "[spec]") {
  json j = tinyBase();
  j.merge_patch(json::parse(R"({"n_token": 1000, "d_embed": 32, "div_val": 2, "cutoffs": [100, 500],
                               "tie_projs": [false, true, true]})"));
  ModelSpec s = parseModelSpec(j, "spec.json");
  CHECK(s.clusterCount() == 3);
  CHECK(s.clusterBounds() == std::vector<std::int64_t>{0, 100, 500, 1000});
  CHECK(s.clusterEmbedDim(0) == 32);
  CHECK(s.clusterEmbedDim(1) == 16);
  CHECK(s.clusterEmbedDim(2) == 8);
}

TEST_CASE("Hugging Face config: names, aliases and Hugging Face defaults", "[spec]") {
  json j = json::parse(R"({"model_type": "transfo-xl", "architectures": ["TransfoXLLMHeadModel"],
    "vocab_size": 1000, "hidden_size": 32, "num_attention_heads": 4, "num_hidden_layers": 3, "d_head": 8,
    "d_inner": 64, "d_embed": 32, "cutoffs": [100, 400], "div_val": 2, "proj_share_all_but_first": true,
    "tie_word_embeddings": true, "adaptive": true, "sample_softmax": -1, "layer_norm_epsilon": 1e-6,
    "init": "normal", "init_range": 0.01, "init_std": 0.02, "eos_token_id": 0, "mem_len": 16, "tgt_len": 8})");
  ModelSpec s = parseModelSpec(j, "config.json");
  CHECK(s.n_token == 1000);
  CHECK(s.d_model == 32);
  CHECK(s.n_head == 4);
  CHECK(s.n_layer == 3);
  CHECK(s.tie_projs == std::vector<bool>{false, true, true});
  CHECK(s.tie_weight);
  CHECK(s.layer_norm_epsilon == 1e-6);
  // Hugging Face defaults for what it leaves out.
  CHECK(s.untie_r);
  CHECK(s.same_length);
  CHECK(s.clamp_len == 1000);
  CHECK(s.warnings.empty());

  // The sizes are required: a bare config is not Hugging Face's default model.
  CHECK_THROWS_WITH(parseModelSpec(json::parse(R"({"model_type": "transfo-xl"})"), "config.json"),
                    "config.json: /vocab_size: required key is missing");
  json bare = json::parse(R"({"model_type": "transfo-xl", "vocab_size": 267735, "n_layer": 18, "n_head": 16,
    "d_model": 1024, "d_head": 64, "d_inner": 4096})");
  ModelSpec d = parseModelSpec(bare, "config.json");
  CHECK(d.n_token == 267735);
  CHECK(d.cutoffs == std::vector<std::int64_t>{20000, 40000, 200000});
  CHECK(d.d_model == 1024);
  CHECK(d.d_embed == 1024);
  CHECK(d.n_head == 16);
  CHECK(d.d_head == 64);
  CHECK(d.d_inner == 4096);
  CHECK(d.div_val == 4);
  CHECK(d.n_layer == 18);
  CHECK(d.mem_len == 1600);
  CHECK(d.tgt_len == 128);
  CHECK(d.tie_projs == std::vector<bool>{false, true, true, true});
  CHECK(d.untie_r);
  CHECK(d.same_length);

  json noShare = bare;
  noShare["proj_share_all_but_first"] = false;
  CHECK(parseModelSpec(noShare, "config.json").tie_projs == std::vector<bool>{false, false, false, false});
}

TEST_CASE("toJson round-trips through parseModelSpec", "[spec]") {
  json j = tinyBase();
  j.merge_patch(json::parse(R"({"n_token": 1000, "d_embed": 32, "div_val": 2, "cutoffs": [100, 500],
                               "tie_projs": [false, true, true], "untie_r": true, "clamp_len": 7})"));
  ModelSpec a = parseModelSpec(j, "spec.json");
  ModelSpec b = parseModelSpec(a.toJson(), "spec.json");
  CHECK(a.toJson() == b.toJson());
  CHECK(a.toJson().size() == 20);
}

TEST_CASE("bad specs: each gives its one-line message", "[spec][errors]") {
  struct Row {
    const char* patch;  // merged into tinyBase(); null deletes a key
    const char* message;
  };
  const Row rows[] = {
      {R"({"n_layer": null})", "spec.json: /n_layer: required key is missing"},
      {R"({"n_token": null})", "spec.json: /n_token: required key is missing"},
      {R"({"tgt_len": null})", "spec.json: /tgt_len: required key is missing"},
      {R"({"mem_len": null})", "spec.json: /mem_len: required key is missing"},
      {R"({"d_head": 0})", "spec.json: /d_head: expected a positive integer, got 0"},
      {R"({"n_head": -2})", "spec.json: /n_head: expected a positive integer, got -2"},
      {R"({"d_inner": 2.5})", "spec.json: /d_inner: expected a positive integer, got 2.5"},
      {R"({"d_inner": 32.0})", "spec.json: /d_inner: expected a positive integer, got 32.0"},
      {R"({"n_layer": "2"})", "spec.json: /n_layer: expected a positive integer, got \"2\""},
      {R"({"n_layer": true})", "spec.json: /n_layer: expected a positive integer, got true"},
      {R"({"n_token": 4294967296})",
       "spec.json: /n_token: expected a positive integer at most 2147483647, got 4294967296"},
      {R"({"n_token": 18446744073709551615})",
       "spec.json: /n_token: expected a positive integer at most 2147483647, got 18446744073709551615"},
      {R"({"d_embed": 0})", "spec.json: /d_embed: expected a positive integer (or -1 or null for d_model), got 0"},
      {R"({"d_embed": -2})", "spec.json: /d_embed: expected a positive integer (or -1 or null for d_model), got -2"},
      {R"({"mem_len": -1})", "spec.json: /mem_len: expected a non-negative integer, got -1"},
      {R"({"div_val": 0})", "spec.json: /div_val: expected a positive integer, got 0"},
      {R"({"pre_lnorm": 1})", "spec.json: /pre_lnorm: expected true or false, got 1"},
      {R"({"tie_weight": "yes"})", "spec.json: /tie_weight: expected true or false, got \"yes\""},
      {R"({"clamp_len": -2})", "spec.json: /clamp_len: expected -1 (no clamping) or a non-negative integer, got -2"},
      {R"({"layer_norm_epsilon": 0})", "spec.json: /layer_norm_epsilon: expected a positive number below 1, got 0"},
      {R"({"layer_norm_epsilon": "1e-5"})", "spec.json: /layer_norm_epsilon: expected a positive number, got \"1e-5\""},
      {R"({"dropout": 1.5})", "spec.json: /dropout: expected a probability in [0, 1), got 1.5"},
      {R"({"cutoffs": 5})", "spec.json: /cutoffs: expected an array of increasing positive integers, got 5"},
      {R"({"cutoffs": [0], "tie_projs": [false, false]})", "spec.json: /cutoffs/0: expected a positive integer, got 0"},
      {R"({"cutoffs": [50, 20], "tie_projs": [false, false, false]})",
       "spec.json: /cutoffs/1: must be greater than /cutoffs/0 (50), got 20"},
      {R"({"cutoffs": [50, 50], "tie_projs": [false, false, false]})",
       "spec.json: /cutoffs/1: must be greater than /cutoffs/0 (50), got 50"},
      {R"({"cutoffs": [50, 97], "tie_projs": [false, false, false]})",
       "spec.json: /cutoffs/1: must be less than /n_token (97), got 97"},
      {R"({"cutoffs": [50]})",
       "spec.json: /tie_projs: expected 2 booleans (one per cluster: cutoffs has 1 entries), got 1"},
      {R"({"tie_projs": [false, true]})",
       "spec.json: /tie_projs: expected 1 booleans (one per cluster: cutoffs has 0 entries), got 2"},
      {R"({"tie_projs": [0]})", "spec.json: /tie_projs/0: expected true or false, got 0"},
      {R"({"tie_projs": false})",
       "spec.json: /tie_projs: expected an array of 1 booleans (one per cluster), got false"},
      {R"({"d_model": 15, "d_embed": 15})",
       "spec.json: /d_model: expected an even number (the position table has d_model/2 sines and d_model/2 "
       "cosines), got 15"},
      {R"({"same_length": true, "mem_len": 0})",
       "spec.json: /same_length: true needs /mem_len > 0 (with no memory every key would be masked), got mem_len 0"},
      {R"({"attn_type": 1})",
       "spec.json: /attn_type: 1 (Shaw et al. relative attention) is not supported; expected 0 (Transformer-XL "
       "relative) or 2 (absolute sinusoid)"},
      {R"({"attn_type": 3})",
       "spec.json: /attn_type: 3 (Al-Rfou et al. learned absolute positions) is not supported; expected 0 "
       "(Transformer-XL relative) or 2 (absolute sinusoid)"},
      {R"({"attn_type": 4})", "spec.json: /attn_type: expected 0 (relative) or 2 (absolute), got 4"},
      {R"({"attn_type": -1})", "spec.json: /attn_type: expected 0 (relative) or 2 (absolute), got -1"},
      {R"({"attn_type": 2})", "spec.json: /mem_len: attn_type 2 with a memory is not supported; expected 0, got 6"},
      {R"({"ext_len": 4})", "spec.json: /ext_len: extended context is not supported; expected 0, got 4"},
      {R"({"sample_softmax": 8})",
       "spec.json: /sample_softmax: sampled softmax is not supported; expected -1 (off), got 8"},
      {R"({"adaptive": "no"})", "spec.json: /adaptive: expected true or false, got \"no\""},
      {R"({"n_token": 1000, "d_embed": 4, "div_val": 4, "cutoffs": [10, 20], "tie_projs": [false, false, false]})",
       "spec.json: /div_val: cluster 2 would get d_embed / div_val^2 = 0 embedding dimensions (d_embed 4); "
       "expected div_val^2 <= d_embed, got div_val 4"},
      {R"({"vocab_size": 98})", "spec.json: /vocab_size: conflicts with /n_token (97), got 98"},
      {R"({"hidden_size": 16})", nullptr},  // an equal alias is fine
      {R"({"model_type": "gpt2"})", "spec.json: /model_type: expected \"transfo-xl\", got \"gpt2\""},
      {R"({"n_head": 2147483647, "d_head": 2147483647, "d_model": 2147483646, "d_embed": 16})",
       "spec.json: /d_head: size product n_head × d_head × d_model overflows 64 bits"},
      {R"({"n_layer": 2000000000, "d_model": 2000000000, "d_embed": 16})",
       "spec.json: /n_layer: expected at most 256 layers, got 2000000000"},
      {R"({"d_inner": 2147483647, "d_model": 2147483646, "d_embed": 16, "d_head": 1})",
       "spec.json: /d_inner: size sum attention + feed-forward weights overflows 64 bits"},
      {R"({"n_token": 2000000000, "d_embed": 2000000000})",
       "spec.json: /n_token: the weights would need 29802322626.1 GiB as f32 (8000000064000004864 parameters, an "
       "upper bound); expected at most 64.0 GiB"},
      {R"({"n_layer": 100000, "d_model": 4096, "d_embed": 16})",
       "spec.json: /n_layer: expected at most 256 layers, got 100000"},
  };
  for (const Row& row : rows) {
    json j = tinyBase();
    j.merge_patch(json::parse(row.patch));
    INFO("patch: " << row.patch);
    CHECK(errorOf(j) == (row.message ? row.message : "(no error)"));
  }
}

TEST_CASE("bad specs: the file name and the top level", "[spec][errors]") {
  CHECK(errorOf(json::array({1, 2}), "config.json") ==
        "config.json: expected a JSON object at the top level, got [1,2]");
  json j = tinyBase();
  j["cutoffs"] = {20000, 100};
  j["n_token"] = 300000;
  j["tie_projs"] = {false, false, false};
  CHECK(errorOf(j, "config.json") == "config.json: /cutoffs/1: must be greater than /cutoffs/0 (20000), got 100");
  json hf = json::parse(R"({"model_type": "transfo-xl", "vocab_size": 1000, "n_layer": 18, "n_head": 16,
    "d_model": 1024, "d_head": 64, "d_inner": 4096})");
  CHECK(errorOf(hf, "config.json") ==
        "config.json: /cutoffs: missing, and the Hugging Face default [20000, 40000, "
        "200000] needs /vocab_size > 200000, got 1000");
  hf["cutoffs"] = {100, 1000};
  CHECK(errorOf(hf, "config.json") == "config.json: /cutoffs/1: must be less than /vocab_size (1000), got 1000");
  hf["cutoffs"] = {100};
  hf["tie_projs"] = {false, false};
  CHECK(errorOf(hf, "config.json") == "(no error)");  // tie_projs alone is taken as given
  hf["proj_share_all_but_first"] = true;
  CHECK(errorOf(hf, "config.json") ==
        "config.json: /tie_projs: conflicts with /proj_share_all_but_first (true): expected [false,true], got "
        "[false,false]");
  hf["proj_share_all_but_first"] = false;
  CHECK(errorOf(hf, "config.json") == "(no error)");
}

TEST_CASE("malformed JSON: line and column", "[spec][errors]") {
  CHECK(errorOfText("{\n  \"n_token\": 97,\n  \"n_layer\": ,\n}") ==
        "spec.json: line 3 column 14: syntax error while parsing value - unexpected ','; expected '[', '{', or a "
        "literal");
  CHECK(errorOfText("").rfind("spec.json: line 1 column 1: ", 0) == 0);
  CHECK(errorOfText("{\"a\": 1, \"a\": 2}") == "spec.json: /a: duplicate key");
  CHECK(errorOfText("{\"x\": {\"b\": [1, {\"c\": 1, \"c\": 2}]}}") == "spec.json: /x/b/1/c: duplicate key");
  CHECK(errorOfText(std::string(100, '[')) ==
        "spec.json: /0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/"
        "0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/"
        "0: JSON nested deeper than 64 levels");
  CHECK(errorOfText("{\"a\": \"\xff\"}").rfind("spec.json: line 1 column ", 0) == 0);
  // A number beyond a double is nlohmann's out_of_range, not a parse_error.
  CHECK(errorOfText("{\n \"d_model\": 1e999}") == "spec.json: line 2 column 13: number overflow parsing '1e999'");
  CHECK(errorOfText("[-1e400]") == "spec.json: line 1 column 2: number overflow parsing '-1e400'");
}

TEST_CASE("loadModelSpec reads files and names them", "[spec]") {
  const std::string dir = TXL_TEST_DATA_DIR;
  ModelSpec s = loadModelSpec(std::string(TXL_MODELS_DIR) + "/kjv-words/config.json");
  CHECK(s.n_token == 11292);
  CHECK(s.cutoffs == std::vector<std::int64_t>{1000, 4000});
  CHECK(s.clusterEmbedDim(2) == 32);
  CHECK_THROWS_WITH(loadModelSpec("/nonexistent/spec.json"),
                    "/nonexistent/spec.json: cannot open: No such file or directory");
  std::string bad = "frontend_bad_spec.json";
  std::ofstream(bad) << "{\"n_token\": 1,\n\"n_layer\" 2}";
  CHECK_THROWS_WITH(loadModelSpec(bad),
                    "frontend_bad_spec.json: line 2 column 11: syntax error while parsing "
                    "object separator - unexpected number literal; expected ':'");
  std::remove(bad.c_str());
}

TEST_CASE("spec text: random corruptions end in txl::Error or a valid spec, never a crash", "[spec][fuzz]") {
  const std::string good = tinyBase().dump();
  std::uint64_t state = 99;
  auto next = [&] {
    state = state * 6364136223846793005ULL + 1442695040888963407ULL;
    return state >> 33;
  };
  const char alphabet[] = "{}[]\":,-0123456789.eEtruefalsn \\/";
  for (int round = 0; round < 3000; ++round) {
    std::string text = good;
    for (int e = 0, n = 1 + static_cast<int>(next() % 3); e < n && !text.empty(); ++e)
      text[next() % text.size()] = alphabet[next() % (sizeof alphabet - 1)];
    try {
      parseModelSpec(parseJsonText(text, "spec.json"), "spec.json");
    } catch (const txl::Error& e) {
      CHECK(std::string(e.what()).rfind("spec.json: ", 0) == 0);
    }
  }
}
