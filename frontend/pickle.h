// frontend/pickle.h - a Python pickle interpreter that executes nothing.
//
// A pickle is a program for a small stack machine; Python's unpickler runs it
// and calls whatever functions its GLOBAL / STACK_GLOBAL / INST opcodes name,
// which is why loading an untrusted checkpoint with pickle can run any code.
// This interpreter runs the same opcodes but only ever builds an inert tree of
// values: a GLOBAL becomes a record of the name it names (and only names on
// the caller's allow-list are accepted at all), REDUCE / NEWOBJ / BUILD become
// records of what would have been called with what, except for the few
// containers whose construction is data (an OrderedDict or Counter is a dict,
// builtins.set a set). Nothing is ever looked up, imported or called.
//
//   pickle::Policy policy;
//   policy.rules = {{"collections.OrderedDict", pickle::GlobalRule::Dict}};
//   pickle::Pickle p = pickle::parse(bytes, "m.bin: archive/data.pkl", policy);
//   const pickle::Value& root = *p.root;
//
// Values live in the Pickle's arena and point at each other with raw
// pointers: the memo may make a value reachable twice (a tied weight is one
// object reached through BINGET) or even from itself (a list appended to
// itself), so a consumer must bound its walks (depth, or a visited set).
// Bounds: nesting (MARK depth), stack size, memo entries and total values are
// capped (Limits), the work (values made and container slots filled) also in
// proportion to the pickle's size, so that memory follows the file's size;
// every length is checked against the bytes left. Each
// problem is one txl::Error line naming the context, the opcode's byte offset
// and the opcode:
//   m.bin: archive/data.pkl: offset 199: global os.system is not allowed (...)
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <utility>
#include <vector>

namespace txl::frontend::pickle {

enum class Kind {
  None,
  Bool,
  Int,           // i (a LONG1/LONG4 wider than 64 bits keeps its little-endian bytes in s, big = true)
  Float,         // f
  String,        // s (UTF-8 as the pickle holds it)
  Bytes,         // s
  List,          // items
  Tuple,         // items
  Dict,          // entries in insertion order; cls: "" for a plain dict, else the global (OrderedDict, Counter)
  Set,           // items (set or frozenset)
  Global,        // s = "module.name"
  Object,        // cls = the global called or instantiated; args; state (BUILD), null when none
  PersistentId,  // args = the persistent id (BINPERSID's operand), for the caller to interpret
  Opaque,        // a skipped object (GlobalRule::Skip): cls names it, nothing else is kept
};

const char* kindName(Kind kind);  // "dict", "tuple", ...

struct Value {
  Kind kind = Kind::None;
  bool b = false;
  std::int64_t i = 0;
  bool big = false;
  double f = 0;
  std::string s;
  std::vector<Value*> items;
  std::vector<std::pair<Value*, Value*>> entries;
  std::string cls;
  Value* args = nullptr;   // Object: the argument tuple; PersistentId: the id
  Value* state = nullptr;  // Object / Dict: BUILD's state
  bool reduced = false;    // Object: made by REDUCE (a call), not NEWOBJ (an instance)

  // Dict lookup by string key (null when absent or not a dict).
  const Value* get(const std::string& key) const;
};

// What an allowed global may become.
enum class GlobalRule {
  Dict,   // REDUCE with () or (mapping,) -> a dict (collections.OrderedDict, collections.Counter)
  Set,    // REDUCE with () or (iterable,) -> a set (builtins.set)
  Call,   // REDUCE -> Object{cls, args} recorded, never called (torch._utils._rebuild_tensor_v2)
  Class,  // NEWOBJ (+ BUILD) -> Object{cls, args, state}; REDUCE refused (nn.Module classes)
  Name,   // may only be named (persistent ids: torch.FloatStorage); REDUCE and NEWOBJ refused
  Skip,   // REDUCE / NEWOBJ / BUILD -> Opaque: members the caller does not need, never built
};

struct Limits {
  std::size_t maxDepth = 1000;      // open MARKs at once
  std::size_t maxStack = 1u << 20;  // values on the stack
  std::size_t maxMemo = 1u << 22;   // memo entries
  std::size_t maxCells = 1u << 24;  // values made plus list / tuple / dict / set slots filled, in all
  std::size_t cellsPerByte = 8;     // ... and at most this many per byte of the pickle (plus maxCellsSlack)
  std::size_t maxCellsSlack = 1u << 16;
  std::size_t maxValues = 1u << 22;  // values made (each some 170 bytes of the arena)
  std::size_t maxBigIntBytes = 64;   // LONG1 / LONG4 payload
};

struct Policy {
  // Allowed globals by "module.name"; a key ending in ".*" allows a whole module
  // prefix ("mem_transformer.*"). Anything else is refused naming it.
  std::map<std::string, GlobalRule> rules;
  // Said after "is not allowed" in the refusal: "(a checkpoint may only name ...)".
  std::string allowedSummary;
  // BINPERSID: gets the persistent id, returns the value to push (the id itself
  // to keep it) or throws. Null: persistent ids are refused.
  std::function<Value*(Value* pid, std::size_t offset)> persistentLoad;
  Limits limits;
};

class Pickle {
 public:
  Value* root = nullptr;
  std::size_t end = 0;  // bytes consumed (one past STOP)

  Value* make(Kind kind);  // a new value in the arena (no limit: for callers)

 private:
  friend class Machine;
  std::unique_ptr<std::deque<Value>> arena_ = std::make_unique<std::deque<Value>>();  // stable addresses
};

// The rule for "module.name" under `policy` (exact name first, then "module.*"
// prefixes), or false when it is not allowed.
bool findRule(const Policy& policy, const std::string& global, GlobalRule* rule);

// Runs the pickle at the start of `bytes` up to its STOP. `context` opens every
// message ("m.bin: archive/data.pkl"); offsets in messages are `baseOffset` +
// the offset inside `bytes`.
Pickle parse(std::span<const std::byte> bytes, const std::string& context, const Policy& policy,
             std::size_t baseOffset = 0);

// A value rendered for a message: one line, at most ~60 characters.
std::string describe(const Value* v);

}  // namespace txl::frontend::pickle
