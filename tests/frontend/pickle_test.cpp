// tests/frontend/pickle_test.cpp - the pickle interpreter: values, memo identity, the allow-list, bounds.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "frontend/pickle.h"
#include "ir/check.h"
#include "tests/frontend/pickle_bytes.h"

using namespace txl::frontend;
using pickle::Kind;
using txl::test::PickleBytes;

namespace {

pickle::Policy containers() {
  pickle::Policy p;
  p.rules = {{"collections.OrderedDict", pickle::GlobalRule::Dict},
             {"collections.Counter", pickle::GlobalRule::Dict},
             {"builtins.set", pickle::GlobalRule::Set},
             {"torch._utils._rebuild_tensor_v2", pickle::GlobalRule::Call},
             {"mem_transformer.*", pickle::GlobalRule::Class},
             {"sacremoses.*", pickle::GlobalRule::Skip},
             {"torch.FloatStorage", pickle::GlobalRule::Name}};
  p.allowedSummary = "a test may only name a few";
  return p;
}

std::string errorOf(const PickleBytes& b, const pickle::Policy& policy = containers()) {
  try {
    pickle::parse(b.bytes, "t.pkl", policy);
  } catch (const txl::Error& e) {
    return e.what();
  }
  return "(no error)";
}

}  // namespace

TEST_CASE("pickle: protocol-2 values become an inert tree", "[pickle]") {
  PickleBytes b;
  b.proto(2).emptyDict().put(0).mark();
  b.str("ints").mark().integer(7).integer(300).integer(-5).integer(1LL << 40).op('l');
  b.str("float").op('G').le(0x000000000000F03FULL, 8);  // big-endian 1.0
  b.str("flags").op(0x88).op(0x89).op('N').tuple(3);
  b.str("bytes").op('C').le(2, 1).raw("ab");
  b.setItems().stop();
  pickle::Pickle p = pickle::parse(b.bytes, "t.pkl", containers());
  const pickle::Value* root = p.root;
  REQUIRE(root->kind == Kind::Dict);
  REQUIRE(root->entries.size() == 4);
  const pickle::Value* ints = root->get("ints");
  REQUIRE(ints->kind == Kind::List);
  REQUIRE(ints->items.size() == 4);
  CHECK(ints->items[0]->i == 7);
  CHECK(ints->items[1]->i == 300);
  CHECK(ints->items[2]->i == -5);
  CHECK(ints->items[3]->i == (1LL << 40));
  CHECK(root->get("float")->f == 1.0);
  const pickle::Value* flags = root->get("flags");
  REQUIRE(flags->kind == Kind::Tuple);
  CHECK(flags->items[0]->b);
  CHECK_FALSE(flags->items[1]->b);
  CHECK(flags->items[2]->kind == Kind::None);
  CHECK(root->get("bytes")->kind == Kind::Bytes);
  CHECK(root->get("bytes")->s == "ab");
  CHECK(p.end == b.bytes.size());
}

TEST_CASE("pickle: LONG1 keeps a wide integer's bytes and sign-extends a narrow one", "[pickle]") {
  PickleBytes b;
  b.proto(2).mark().op(0x8a).le(10, 1).le(0x20f9469cfc6cULL, 6).le(0x1950a86aULL, 4);
  b.op(0x8a).le(2, 1).le(0xff38, 2).op('t').stop();  // -200
  pickle::Pickle p = pickle::parse(b.bytes, "t.pkl", containers());
  REQUIRE(p.root->items.size() == 2);
  CHECK(p.root->items[0]->big);
  CHECK(p.root->items[0]->s.size() == 10);
  CHECK_FALSE(p.root->items[1]->big);
  CHECK(p.root->items[1]->i == -200);
}

TEST_CASE("pickle: the memo returns the same object, so a tie stays one object", "[pickle]") {
  PickleBytes b;
  b.proto(2).emptyDict().put(0).put(1).get(1).tuple(2).stop();
  pickle::Pickle p = pickle::parse(b.bytes, "t.pkl", containers());
  REQUIRE(p.root->items.size() == 2);
  CHECK(p.root->items[0] == p.root->items[1]);
}

TEST_CASE("pickle: protocol 4 (FRAME, MEMOIZE, STACK_GLOBAL) and the container globals", "[pickle]") {
  PickleBytes body;
  body.emptyDict().op(0x94).mark();
  body.shortStr("counter").op(0x94).shortStr("collections").op(0x94).shortStr("Counter").op(0x94).op(0x93);
  body.emptyDict().mark().shortStr("the").integer(5).shortStr("a").integer(3).setItems().tuple(1).reduce();
  body.shortStr("seen").shortStr("builtins").shortStr("set").op(0x93).op(']').shortStr("x").op('a').tuple(1).reduce();
  body.shortStr("moses").shortStr("sacremoses.tokenize").shortStr("MosesTokenizer").op(0x93).tuple(0).op(0x81);
  body.emptyDict().op('b');
  body.setItems().stop();
  PickleBytes b;
  b.proto(4).op(0x95).le(body.bytes.size(), 8);
  b.bytes.insert(b.bytes.end(), body.bytes.begin(), body.bytes.end());
  pickle::Pickle p = pickle::parse(b.bytes, "t.pkl", containers());
  const pickle::Value* counter = p.root->get("counter");
  REQUIRE(counter->kind == Kind::Dict);
  CHECK(counter->cls == "collections.Counter");
  REQUIRE(counter->entries.size() == 2);
  CHECK(counter->get("a")->i == 3);
  REQUIRE(p.root->get("seen")->kind == Kind::Set);
  CHECK(p.root->get("seen")->items.size() == 1);
  CHECK(p.root->get("moses")->kind == Kind::Opaque);
  CHECK(p.root->get("moses")->cls == "sacremoses.tokenize.MosesTokenizer");
}

TEST_CASE("pickle: a class becomes a record through NEWOBJ and BUILD, never called", "[pickle]") {
  PickleBytes b;
  b.proto(2).global("mem_transformer", "PositionwiseFF").tuple(0).op(0x81);
  b.emptyDict().mark().str("d_inner").integer(32).setItems().op('b').stop();
  pickle::Pickle p = pickle::parse(b.bytes, "t.pkl", containers());
  REQUIRE(p.root->kind == Kind::Object);
  CHECK(p.root->cls == "mem_transformer.PositionwiseFF");
  CHECK_FALSE(p.root->reduced);
  REQUIRE(p.root->state);
  CHECK(p.root->state->get("d_inner")->i == 32);

  PickleBytes called;
  called.proto(2).global("mem_transformer", "PositionwiseFF").tuple(0).reduce().stop();
  CHECK_THAT(errorOf(called), Catch::Contains("offset 35: REDUCE: global mem_transformer.PositionwiseFF is a class") &&
                                  Catch::Contains("never called"));
  PickleBytes storage;
  storage.proto(2).global("torch", "FloatStorage").tuple(0).reduce().stop();
  CHECK_THAT(errorOf(storage), Catch::Contains("global torch.FloatStorage may only be named, never called"));
  PickleBytes callAsClass;
  callAsClass.proto(2).global("torch._utils", "_rebuild_tensor_v2").tuple(0).op(0x81).stop();
  CHECK_THAT(errorOf(callAsClass), Catch::Contains("NEWOBJ: global torch._utils._rebuild_tensor_v2 is not a class"));
}

TEST_CASE("pickle: globals off the allow-list are refused by name, whatever the opcode", "[pickle]") {
  PickleBytes global;
  global.proto(2).global("os", "system").str("touch /tmp/PWNED_pickle_test").tuple(1).reduce().stop();
  CHECK(errorOf(global) == "t.pkl: offset 2: global os.system is not allowed (a test may only name a few)");

  PickleBytes stack;
  stack.proto(4).shortStr("builtins").shortStr("eval").op(0x93).shortStr("1+1").tuple(1).reduce().stop();
  CHECK(errorOf(stack) == "t.pkl: offset 18: global builtins.eval is not allowed (a test may only name a few)");

  PickleBytes inst;
  inst.proto(2).mark().str("id").raw("isubprocess\nPopen\n").stop();
  CHECK_THAT(errorOf(inst), Catch::Contains("offset 10: global subprocess.Popen is not allowed"));

  // INST of an allowed class is refused too: it would instantiate.
  PickleBytes instAllowed;
  instAllowed.proto(2).mark().raw("imem_transformer\nMemTransformerLM\n").stop();
  CHECK_THAT(errorOf(instAllowed),
             Catch::Contains("INST: global mem_transformer.MemTransformerLM may not be instantiated"));

  PickleBytes obj;
  obj.proto(2).mark().global("mem_transformer", "MemTransformerLM").op('o').stop();
  CHECK_THAT(errorOf(obj), Catch::Contains("OBJ: global mem_transformer.MemTransformerLM may not be instantiated"));

  PickleBytes posix;
  posix.proto(2).global("posix", "system").stop();
  CHECK_THAT(errorOf(posix), Catch::Contains("global posix.system is not allowed"));

  // A name that only looks like an allowed prefix.
  PickleBytes prefix;
  prefix.proto(2).global("mem_transformer_evil", "X").stop();
  CHECK_THAT(errorOf(prefix), Catch::Contains("global mem_transformer_evil.X is not allowed"));

  // REDUCE of something that is not a global.
  PickleBytes notGlobal;
  notGlobal.proto(2).str("os.system").tuple(0).reduce().stop();
  CHECK_THAT(errorOf(notGlobal), Catch::Contains("REDUCE: expected a global to call, got \"os.system\""));
}

TEST_CASE("pickle: nesting, stack, memo and sizes are bounded", "[pickle]") {
  PickleBytes marks;
  marks.proto(2);
  for (int i = 0; i < 1000000; ++i) marks.mark();
  marks.stop();
  CHECK_THAT(errorOf(marks), Catch::Contains("offset 1002: MARK: more than 1000 nested MARKs (the limit)"));

  // A million nested lists: the arena makes them, nothing recurses over them.
  PickleBytes lists;
  lists.proto(2);
  for (int i = 0; i < 1000000; ++i) lists.op(']');
  for (int i = 0; i < 999999; ++i) lists.op('a');
  lists.stop();
  pickle::Pickle deep = pickle::parse(lists.bytes, "t.pkl", containers());
  CHECK(deep.root->kind == Kind::List);
  CHECK(pickle::describe(deep.root) == "a list of 1");
  pickle::Policy small = containers();
  small.limits.maxStack = 1000;
  CHECK_THAT(errorOf(lists, small), Catch::Contains("offset 1002: EMPTY_LIST: the stack would hold more than 1000"));

  PickleBytes long4;
  long4.proto(2).op(0x8b).le(0x7fffffff, 4).stop();
  CHECK_THAT(errorOf(long4), Catch::Contains("LONG4: integer of 2147483647 bytes is over the limit of 64"));
  PickleBytes longNegative;
  longNegative.proto(2).op(0x8b).le(0xffffffff, 4).stop();
  CHECK_THAT(errorOf(longNegative), Catch::Contains("LONG4: negative integer length"));

  PickleBytes unicode8;
  unicode8.proto(4).op(0x8d).le(1ULL << 62, 8).raw("abc").stop();
  CHECK_THAT(errorOf(unicode8), Catch::Contains("offset 2: BINUNICODE8: string of 4611686018427387904 bytes runs past "
                                                "the end of the pickle (4 bytes left)"));
  PickleBytes unicode;
  unicode.proto(2).op('X').le(0xffffffff, 4).stop();
  CHECK_THAT(errorOf(unicode), Catch::Contains("BINUNICODE: string of 4294967295 bytes runs past the end"));
  PickleBytes frame;
  frame.proto(4).op(0x95).le(1ULL << 40, 8).stop();
  CHECK_THAT(errorOf(frame), Catch::Contains("FRAME: frame of 1099511627776 bytes runs past the end"));

  PickleBytes unset;
  unset.proto(2).emptyDict().put(0).op('0').get(5).stop();
  CHECK(errorOf(unset) == "t.pkl: offset 6: BINGET: memo index 5 was never set");
  PickleBytes longUnset;
  longUnset.proto(2).op('j').le(0xfffffff0, 4).stop();
  CHECK_THAT(errorOf(longUnset), Catch::Contains("LONG_BINGET: memo index 4294967280 was never set"));

  pickle::Policy tinyMemo = containers();
  tinyMemo.limits.maxMemo = 3;
  PickleBytes memo;
  memo.proto(2).op('N');
  for (int i = 0; i < 10; ++i) memo.op('r').le(static_cast<std::uint64_t>(i) << 20, 4);
  memo.stop();
  CHECK_THAT(errorOf(memo, tinyMemo), Catch::Contains("LONG_BINPUT: the memo would hold more than 3 entries"));

  // Copying one dict into Counters over and over runs into the cell budget.
  pickle::Policy tinyCells = containers();
  tinyCells.limits.maxCells = 10000;
  PickleBytes copies;
  copies.proto(2).emptyDict().put(0).mark();
  for (int i = 0; i < 100; ++i) copies.integer(i).op('N');
  copies.setItems();
  for (int i = 0; i < 1000; ++i) copies.global("collections", "Counter").get(0).tuple(1).reduce().op('0');
  copies.stop();
  CHECK_THAT(errorOf(copies, tinyCells), Catch::Contains("REDUCE: the pickle builds more than 10000 values"));
  // ... and in proportion to the pickle's size, so that memory follows the file's size.
  pickle::Policy perByte = containers();
  perByte.limits.cellsPerByte = 1;
  perByte.limits.maxCellsSlack = 0;
  CHECK_THAT(errorOf(copies, perByte), Catch::Contains("values and container slots (the limit for its " +
                                                       std::to_string(copies.bytes.size()) + " bytes: 1 a byte)"));
  pickle::Policy fewValues = containers();
  fewValues.limits.maxValues = 50;
  CHECK_THAT(errorOf(copies, fewValues), Catch::Contains("the pickle makes more than 50 values (the limit)"));
}

TEST_CASE("pickle: a list that contains itself is made, and described without recursing", "[pickle]") {
  PickleBytes b;
  b.proto(2).op(']').put(0).get(0).op('a').stop();
  pickle::Pickle p = pickle::parse(b.bytes, "t.pkl", containers());
  REQUIRE(p.root->items.size() == 1);
  CHECK(p.root->items[0] == p.root);
}

TEST_CASE("pickle: unsupported and unknown opcodes are named", "[pickle]") {
  PickleBytes text;
  text.proto(2).raw("I42\n").stop();
  CHECK(errorOf(text) ==
        "t.pkl: offset 2: INT: opcode not supported by this reader (torch.save and pickle.dump "
        "never need it)");
  PickleBytes ext;
  ext.proto(2).op(0x82).le(1, 1).stop();
  CHECK_THAT(errorOf(ext), Catch::Contains("offset 2: EXT1: opcode not supported"));
  PickleBytes unknown;
  unknown.proto(2).op(0xff).stop();
  CHECK(errorOf(unknown) == "t.pkl: offset 2: unknown opcode 0xff");
  PickleBytes proto;
  proto.proto(9).op('N').stop();
  CHECK_THAT(errorOf(proto), Catch::Contains("PROTO: protocol 9 is not one this reader knows"));
  PickleBytes persid;
  persid.proto(2).str("x").op('Q').stop();
  CHECK_THAT(errorOf(persid), Catch::Contains("BINPERSID: persistent ids are not allowed here"));
  PickleBytes underflow;
  underflow.proto(2).op('a').stop();
  CHECK_THAT(errorOf(underflow), Catch::Contains("APPEND: needs a value on the stack, found none"));
  PickleBytes markFloor;  // values below a MARK are out of reach, as in Python
  markFloor.proto(2).op(']').mark().op('N').op('a').stop();
  CHECK_THAT(errorOf(markFloor), Catch::Contains("APPEND: needs a value on the stack, found none"));
  PickleBytes two;
  two.proto(2).op('N').op('N').stop();
  CHECK_THAT(errorOf(two), Catch::Contains("STOP: expected exactly one value on the stack, found 2"));
  PickleBytes setitemList;
  setitemList.proto(2).op(']').str("k").op('N').op('s').stop();
  CHECK_THAT(errorOf(setitemList), Catch::Contains("SETITEM: expected a dict to set an item of, got a list of 0"));
}

TEST_CASE("pickle: every prefix of a pickle is refused cleanly", "[pickle]") {
  PickleBytes body;
  body.emptyDict().op(0x94).mark();
  body.shortStr("counter").op(0x94).shortStr("collections").op(0x94).shortStr("OrderedDict").op(0x94).op(0x93);
  body.tuple(0).reduce().shortStr("n").op('J').le(12345, 4).shortStr("f").op('G').le(0, 8).setItems().stop();
  PickleBytes b;
  b.proto(4).op(0x95).le(body.bytes.size(), 8);
  b.bytes.insert(b.bytes.end(), body.bytes.begin(), body.bytes.end());
  REQUIRE_NOTHROW(pickle::parse(b.bytes, "t.pkl", containers()));
  for (std::size_t n = 0; n < b.bytes.size(); ++n) {
    PickleBytes prefix;
    prefix.bytes.assign(b.bytes.begin(), b.bytes.begin() + static_cast<std::ptrdiff_t>(n));
    INFO("prefix of " << n << " bytes");
    CHECK_THROWS_AS(pickle::parse(prefix.bytes, "t.pkl", containers()), txl::Error);
  }
}
