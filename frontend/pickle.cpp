// frontend/pickle.cpp - the pickle opcode interpreter (see pickle.h).
//
// Algorithm: one pass over the opcodes, as Python's _Unpickler.load does, with
// a value stack, a stack of MARK positions and a memo; every opcode either
// pushes a value it read from the bytes, rearranges values already made, or
// (REDUCE, NEWOBJ, NEWOBJ_EX, BUILD, BINPERSID) records an operation as an
// inert value. The opcodes are those of protocols 2 to 4 that torch.save and
// pickle.dump emit, plus the protocol-1 string and container forms; the text
// forms of protocol 0, the extension registry (EXT1/2/4) and protocol 5's
// out-of-band buffers are refused by name. INST and OBJ are refused naming
// the global they would instantiate.
//
// Bounds, all checked before the memory is taken: every length against the
// bytes left; MARK depth, stack size and memo entries against Limits; and one
// budget of "cells" (values made plus container slots filled) so that copying
// a container many times (Counter(d) over and over) cannot grow without end.
#include "frontend/pickle.h"

#include <algorithm>
#include <bit>
#include <cstdint>
#include <cstring>
#include <unordered_map>

#include "ir/check.h"

namespace txl::frontend::pickle {

namespace {

std::string hexByte(std::uint8_t b) {
  const char* digits = "0123456789abcdef";
  return std::string("0x") + digits[b >> 4] + digits[b & 15];
}

// Opcode names for messages (Python's pickletools names).
const char* opcodeName(std::uint8_t op) {
  switch (op) {
    case 0x80:
      return "PROTO";
    case 0x95:
      return "FRAME";
    case '.':
      return "STOP";
    case '(':
      return "MARK";
    case '0':
      return "POP";
    case '1':
      return "POP_MARK";
    case '2':
      return "DUP";
    case '}':
      return "EMPTY_DICT";
    case ']':
      return "EMPTY_LIST";
    case ')':
      return "EMPTY_TUPLE";
    case 't':
      return "TUPLE";
    case 0x85:
      return "TUPLE1";
    case 0x86:
      return "TUPLE2";
    case 0x87:
      return "TUPLE3";
    case 'l':
      return "LIST";
    case 'd':
      return "DICT";
    case 'J':
      return "BININT";
    case 'K':
      return "BININT1";
    case 'M':
      return "BININT2";
    case 0x8a:
      return "LONG1";
    case 0x8b:
      return "LONG4";
    case 'G':
      return "BINFLOAT";
    case 'X':
      return "BINUNICODE";
    case 0x8c:
      return "SHORT_BINUNICODE";
    case 0x8d:
      return "BINUNICODE8";
    case 'B':
      return "BINBYTES";
    case 'C':
      return "SHORT_BINBYTES";
    case 0x8e:
      return "BINBYTES8";
    case 'T':
      return "BINSTRING";
    case 'U':
      return "SHORT_BINSTRING";
    case 'N':
      return "NONE";
    case 0x88:
      return "NEWTRUE";
    case 0x89:
      return "NEWFALSE";
    case 'q':
      return "BINPUT";
    case 'r':
      return "LONG_BINPUT";
    case 0x94:
      return "MEMOIZE";
    case 'h':
      return "BINGET";
    case 'j':
      return "LONG_BINGET";
    case 'a':
      return "APPEND";
    case 'e':
      return "APPENDS";
    case 's':
      return "SETITEM";
    case 'u':
      return "SETITEMS";
    case 'c':
      return "GLOBAL";
    case 0x93:
      return "STACK_GLOBAL";
    case 'R':
      return "REDUCE";
    case 'b':
      return "BUILD";
    case 0x81:
      return "NEWOBJ";
    case 0x92:
      return "NEWOBJ_EX";
    case 'Q':
      return "BINPERSID";
    case 0x8f:
      return "EMPTY_SET";
    case 0x90:
      return "ADDITEMS";
    case 0x91:
      return "FROZENSET";
    case 'i':
      return "INST";
    case 'o':
      return "OBJ";
    case 'P':
      return "PERSID";
    case 'I':
      return "INT";
    case 'L':
      return "LONG";
    case 'F':
      return "FLOAT";
    case 'S':
      return "STRING";
    case 'V':
      return "UNICODE";
    case 'g':
      return "GET";
    case 'p':
      return "PUT";
    case 0x82:
      return "EXT1";
    case 0x83:
      return "EXT2";
    case 0x84:
      return "EXT4";
    case 0x96:
      return "BYTEARRAY8";
    case 0x97:
      return "NEXT_BUFFER";
    case 0x98:
      return "READONLY_BUFFER";
    default:
      return nullptr;
  }
}

// A dict key as a string for the duplicate-key index ("" when the key is not
// indexable: such keys are appended, never merged). Python's True == 1.
std::string keyOf(const Value* k) {
  switch (k->kind) {
    case Kind::String:
      return "s" + k->s;
    case Kind::Int:
      return k->big ? "b" + k->s : "i" + std::to_string(k->i);
    case Kind::Bool:
      return "i" + std::to_string(k->b ? 1 : 0);
    case Kind::None:
      return "n";
    default:
      return "";
  }
}

}  // namespace

const char* kindName(Kind kind) {
  switch (kind) {
    case Kind::None:
      return "None";
    case Kind::Bool:
      return "bool";
    case Kind::Int:
      return "int";
    case Kind::Float:
      return "float";
    case Kind::String:
      return "string";
    case Kind::Bytes:
      return "bytes";
    case Kind::List:
      return "list";
    case Kind::Tuple:
      return "tuple";
    case Kind::Dict:
      return "dict";
    case Kind::Set:
      return "set";
    case Kind::Global:
      return "global";
    case Kind::Object:
      return "object";
    case Kind::PersistentId:
      return "persistent id";
    case Kind::Opaque:
      return "skipped object";
  }
  return "?";
}

const Value* Value::get(const std::string& key) const {
  if (kind != Kind::Dict) return nullptr;
  const Value* found = nullptr;
  for (const auto& [k, v] : entries)
    if (k->kind == Kind::String && k->s == key) found = v;  // the last one, as a dict keeps it
  return found;
}

Value* Pickle::make(Kind kind) {
  arena_->emplace_back();
  Value* v = &arena_->back();
  v->kind = kind;
  return v;
}

bool findRule(const Policy& policy, const std::string& global, GlobalRule* rule) {
  if (auto it = policy.rules.find(global); it != policy.rules.end()) {
    *rule = it->second;
    return true;
  }
  for (std::size_t dot = global.rfind('.'); dot != std::string::npos && dot > 0; dot = global.rfind('.', dot - 1)) {
    if (auto it = policy.rules.find(global.substr(0, dot) + ".*"); it != policy.rules.end()) {
      *rule = it->second;
      return true;
    }
    if (dot == 0) break;
  }
  return false;
}

std::string describe(const Value* v) {
  if (!v) return "nothing";
  std::string s;
  switch (v->kind) {
    case Kind::None:
      s = "None";
      break;
    case Kind::Bool:
      s = v->b ? "True" : "False";
      break;
    case Kind::Int:
      s = v->big ? "a " + std::to_string(v->s.size()) + "-byte integer" : std::to_string(v->i);
      break;
    case Kind::Float:
      s = std::to_string(v->f);
      break;
    case Kind::String:
      s = "\"" + oneLine(v->s) + "\"";
      break;
    case Kind::Bytes:
      s = "bytes of length " + std::to_string(v->s.size());
      break;
    case Kind::List:
      s = "a list of " + std::to_string(v->items.size());
      break;
    case Kind::Tuple:
      s = "a tuple of " + std::to_string(v->items.size());
      break;
    case Kind::Dict:
      s = (v->cls.empty() ? std::string("a dict") : "a " + v->cls) + " of " + std::to_string(v->entries.size());
      break;
    case Kind::Set:
      s = "a set of " + std::to_string(v->items.size());
      break;
    case Kind::Global:
      s = "global " + oneLine(v->s);
      break;
    case Kind::Object:
      s = (v->reduced ? "a call of " : "an object of ") + oneLine(v->cls);
      break;
    case Kind::PersistentId:
      s = "a persistent id";
      break;
    case Kind::Opaque:
      s = "a skipped " + oneLine(v->cls);
      break;
  }
  if (s.size() > 60) s = s.substr(0, 57) + "...";
  return s;
}

class Machine {
 public:
  Machine(std::span<const std::byte> bytes, const std::string& context, const Policy& policy, std::size_t base)
      : bytes_(bytes),
        context_(context),
        policy_(policy),
        base_(base),
        maxCells_(std::min(policy.limits.maxCells,
                           bytes.size() > (SIZE_MAX - policy.limits.maxCellsSlack) /
                                              std::max<std::size_t>(policy.limits.cellsPerByte, 1)
                               ? policy.limits.maxCells
                               : bytes.size() * policy.limits.cellsPerByte + policy.limits.maxCellsSlack)) {}

  Pickle run();

 private:
  [[noreturn]] void fail(const std::string& message) const {
    throw Error(context_ + ": offset " + std::to_string(base_ + opAt_) + ": " + message);
  }
  [[noreturn]] void failOp(const std::string& message) const {
    const char* name = opcodeName(op_);
    fail(std::string(name ? name : "opcode " + hexByte(op_)) + ": " + message);
  }

  std::size_t left() const { return bytes_.size() - at_; }
  const std::byte* take(std::uint64_t n, const char* what) {
    if (n > left())
      failOp(std::string(what) + " of " + std::to_string(n) + " bytes runs past the end of the pickle (" +
             std::to_string(left()) + " bytes left)");
    const std::byte* p = bytes_.data() + at_;
    at_ += static_cast<std::size_t>(n);
    return p;
  }
  std::uint64_t readLE(int n, const char* what) {
    const std::byte* p = take(static_cast<std::uint64_t>(n), what);
    std::uint64_t v = 0;
    for (int i = n - 1; i >= 0; --i) v = (v << 8) | std::to_integer<std::uint64_t>(p[i]);
    return v;
  }
  std::string readLine(const char* what) {
    std::size_t limit = std::min<std::size_t>(left(), 1024);
    for (std::size_t k = 0; k < limit; ++k) {
      if (bytes_[at_ + k] == std::byte{'\n'}) {
        std::string s(reinterpret_cast<const char*>(bytes_.data() + at_), k);
        at_ += k + 1;
        return s;
      }
    }
    failOp(std::string(what) + ": no newline within " + std::to_string(limit) + " bytes");
  }

  void spend(std::size_t cells) {
    if (cells > maxCells_ || cellsUsed_ > maxCells_ - cells)
      failOp("the pickle builds more than " + std::to_string(maxCells_) + " values and container slots (the limit" +
             (maxCells_ < policy_.limits.maxCells ? " for its " + std::to_string(bytes_.size()) + " bytes: " +
                                                        std::to_string(policy_.limits.cellsPerByte) + " a byte)"
                                                  : std::string(")")));
    cellsUsed_ += cells;
  }
  Value* make(Kind kind) {
    spend(1);
    if (++valuesMade_ > policy_.limits.maxValues)
      failOp("the pickle makes more than " + std::to_string(policy_.limits.maxValues) + " values (the limit)");
    return out_.make(kind);
  }
  void push(Value* v) {
    if (stack_.size() >= policy_.limits.maxStack)
      failOp("the stack would hold more than " + std::to_string(policy_.limits.maxStack) + " values (the limit)");
    stack_.push_back(v);
  }
  Value* pop() {
    if (stack_.size() <= floor()) failOp("needs a value on the stack, found none");
    Value* v = stack_.back();
    stack_.pop_back();
    return v;
  }
  Value* top() {
    if (stack_.size() <= floor()) failOp("needs a value on the stack, found none");
    return stack_.back();
  }
  std::size_t floor() const { return marks_.empty() ? 0 : marks_.back(); }
  // The values above the topmost MARK, which is removed.
  std::vector<Value*> popMark() {
    if (marks_.empty()) failOp("needs a MARK, found none");
    std::size_t m = marks_.back();
    marks_.pop_back();
    std::vector<Value*> items(stack_.begin() + static_cast<std::ptrdiff_t>(m), stack_.end());
    stack_.resize(m);
    return items;
  }

  std::string globalName(const std::string& module, const std::string& name) {
    // Python 3 reads protocol-2 pickles with fix_imports: __builtin__ is builtins.
    return module + "." + name;
  }
  GlobalRule ruleOf(const std::string& global) {
    GlobalRule rule;
    if (!findRule(policy_, global, &rule))
      fail("global " + oneLine(global) + " is not allowed" +
           (policy_.allowedSummary.empty() ? "" : " (" + policy_.allowedSummary + ")"));
    return rule;
  }
  Value* makeGlobal(const std::string& global) {
    ruleOf(global);
    Value* v = make(Kind::Global);
    v->s = global;
    return v;
  }

  void memoPut(std::uint64_t index, Value* v) {
    if (memo_.size() >= policy_.limits.maxMemo && !memo_.contains(index))
      failOp("the memo would hold more than " + std::to_string(policy_.limits.maxMemo) + " entries (the limit)");
    memo_[index] = v;
  }
  Value* memoGet(std::uint64_t index) {
    auto it = memo_.find(index);
    if (it == memo_.end()) failOp("memo index " + std::to_string(index) + " was never set");
    return it->second;
  }

  void setItem(Value* dict, Value* key, Value* value) {
    std::string k = keyOf(key);
    if (!k.empty()) {
      auto& index = dictIndex_[dict];
      if (auto it = index.find(k); it != index.end()) {
        dict->entries[it->second].second = value;
        return;
      }
      index.emplace(std::move(k), dict->entries.size());
    }
    spend(1);
    dict->entries.emplace_back(key, value);
  }
  void copyInto(Value* dict, const Value* from) {
    if (from->kind == Kind::Dict) {
      for (const auto& [k, v] : std::vector(from->entries)) setItem(dict, k, v);
    } else if (from->kind == Kind::List || from->kind == Kind::Tuple) {
      for (Value* pair : std::vector(from->items)) {
        if (pair->kind != Kind::Tuple && pair->kind != Kind::List)
          failOp("expected (key, value) pairs, got " + describe(pair));
        if (pair->items.size() != 2) failOp("expected (key, value) pairs, got " + describe(pair));
        setItem(dict, pair->items[0], pair->items[1]);
      }
    } else {
      failOp("expected a mapping or a list of pairs, got " + describe(from));
    }
  }
  const Value* requireGlobal(Value* v, const char* what) {
    if (v->kind != Kind::Global) failOp(std::string("expected a global ") + what + ", got " + describe(v));
    return v;
  }
  Value* tupleArg(Value* args) {
    if (args->kind != Kind::Tuple) failOp("expected an argument tuple, got " + describe(args));
    return args;
  }

  void reduce();
  void newObj(Value* cls, Value* args);
  void build();
  Value* readInt(std::uint64_t n);

  std::span<const std::byte> bytes_;
  const std::string& context_;
  const Policy& policy_;
  std::size_t base_;
  std::size_t maxCells_;  // Limits::maxCells, or less for a small pickle
  std::size_t at_ = 0, opAt_ = 0;
  std::uint8_t op_ = 0;
  Pickle out_;
  std::vector<Value*> stack_;
  std::vector<std::size_t> marks_;
  std::unordered_map<std::uint64_t, Value*> memo_;
  std::unordered_map<const Value*, std::unordered_map<std::string, std::size_t>> dictIndex_;
  std::size_t cellsUsed_ = 0;
  std::size_t valuesMade_ = 0;
};

Value* Machine::readInt(std::uint64_t n) {
  if (n > policy_.limits.maxBigIntBytes)
    failOp("integer of " + std::to_string(n) + " bytes is over the limit of " +
           std::to_string(policy_.limits.maxBigIntBytes));
  const std::byte* p = take(n, "integer");
  Value* v = make(Kind::Int);
  if (n <= 8) {
    std::uint64_t u = 0;
    for (std::uint64_t k = n; k-- > 0;) u = (u << 8) | std::to_integer<std::uint64_t>(p[k]);
    if (n > 0 && n < 8 && (std::to_integer<std::uint8_t>(p[n - 1]) & 0x80)) u |= ~std::uint64_t{0} << (8 * n);
    v->i = static_cast<std::int64_t>(u);
  } else {
    v->big = true;
    v->s.assign(reinterpret_cast<const char*>(p), static_cast<std::size_t>(n));
  }
  return v;
}

void Machine::reduce() {
  Value* args = pop();
  Value* callable = pop();
  requireGlobal(callable, "to call");
  tupleArg(args);
  const std::string& name = callable->s;
  switch (ruleOf(name)) {
    case GlobalRule::Dict: {
      Value* d = make(Kind::Dict);
      d->cls = name;
      if (args->items.size() > 1) failOp(oneLine(name) + " takes at most one argument, got " + describe(args));
      if (args->items.size() == 1 && args->items[0]->kind != Kind::None) copyInto(d, args->items[0]);
      push(d);
      return;
    }
    case GlobalRule::Set: {
      Value* s = make(Kind::Set);
      s->cls = name;
      if (args->items.size() > 1) failOp(oneLine(name) + " takes at most one argument, got " + describe(args));
      if (args->items.size() == 1) {
        const Value* from = args->items[0];
        if (from->kind != Kind::List && from->kind != Kind::Tuple && from->kind != Kind::Set)
          failOp(oneLine(name) + " expects a list, tuple or set, got " + describe(from));
        spend(from->items.size());
        s->items = from->items;
      }
      push(s);
      return;
    }
    case GlobalRule::Call: {
      Value* o = make(Kind::Object);
      o->cls = name;
      o->args = args;
      o->reduced = true;
      push(o);
      return;
    }
    case GlobalRule::Skip: {
      Value* o = make(Kind::Opaque);
      o->cls = name;
      push(o);
      return;
    }
    case GlobalRule::Class:
      failOp("global " + oneLine(name) + " is a class that may only be instantiated by NEWOBJ, never called");
    case GlobalRule::Name:
      failOp("global " + oneLine(name) + " may only be named, never called");
  }
}

void Machine::newObj(Value* cls, Value* args) {
  requireGlobal(cls, "class to instantiate");
  tupleArg(args);
  const std::string& name = cls->s;
  switch (ruleOf(name)) {
    case GlobalRule::Class: {
      Value* o = make(Kind::Object);
      o->cls = name;
      o->args = args;
      push(o);
      return;
    }
    case GlobalRule::Dict: {
      Value* d = make(Kind::Dict);
      d->cls = name;
      push(d);
      return;
    }
    case GlobalRule::Set: {
      Value* s = make(Kind::Set);
      s->cls = name;
      push(s);
      return;
    }
    case GlobalRule::Skip: {
      Value* o = make(Kind::Opaque);
      o->cls = name;
      push(o);
      return;
    }
    case GlobalRule::Call:
    case GlobalRule::Name:
      failOp("global " + oneLine(name) + " is not a class that may be instantiated");
  }
}

void Machine::build() {
  Value* state = pop();
  Value* target = top();
  switch (target->kind) {
    case Kind::Object:
    case Kind::Dict:  // an OrderedDict's __dict__ (a state dict's _metadata): kept, not interpreted
      target->state = state;
      return;
    case Kind::Opaque:
      return;
    default:
      failOp("cannot set the state of " + describe(target));
  }
}

Pickle Machine::run() {
  while (true) {
    if (at_ >= bytes_.size()) {
      opAt_ = at_;
      fail("the pickle ends without STOP");
    }
    opAt_ = at_;
    op_ = std::to_integer<std::uint8_t>(bytes_[at_++]);
    switch (op_) {
      case 0x80: {  // PROTO
        std::uint64_t v = readLE(1, "protocol");
        if (v > 5) failOp("protocol " + std::to_string(v) + " is not one this reader knows (0 to 5)");
        break;
      }
      case 0x95: {  // FRAME: a length prefix for buffering; the opcodes inside are read as usual
        std::uint64_t n = readLE(8, "frame length");
        if (n > left())
          failOp("frame of " + std::to_string(n) + " bytes runs past the end of the pickle (" + std::to_string(left()) +
                 " bytes left)");
        break;
      }
      case '.': {  // STOP
        if (!marks_.empty()) failOp("a MARK is still open");
        if (stack_.size() != 1)
          failOp("expected exactly one value on the stack, found " + std::to_string(stack_.size()));
        out_.root = stack_.back();
        out_.end = at_;
        return std::move(out_);
      }
      case '(':
        if (marks_.size() >= policy_.limits.maxDepth)
          failOp("more than " + std::to_string(policy_.limits.maxDepth) + " nested MARKs (the limit)");
        marks_.push_back(stack_.size());
        break;
      case '0':
        pop();
        break;
      case '1':
        popMark();
        break;
      case '2':
        push(top());
        break;
      case '}':
        push(make(Kind::Dict));
        break;
      case ']':
        push(make(Kind::List));
        break;
      case ')':
        push(make(Kind::Tuple));
        break;
      case 0x8f:
        push(make(Kind::Set));
        break;
      case 't':
      case 'l': {
        std::vector<Value*> items = popMark();
        Value* v = make(op_ == 't' ? Kind::Tuple : Kind::List);
        spend(items.size());
        v->items = std::move(items);
        push(v);
        break;
      }
      case 0x91: {  // FROZENSET
        std::vector<Value*> items = popMark();
        Value* v = make(Kind::Set);
        v->cls = "builtins.frozenset";
        spend(items.size());
        v->items = std::move(items);
        push(v);
        break;
      }
      case 0x85:
      case 0x86:
      case 0x87: {
        const std::size_t n = op_ - 0x84u;
        if (stack_.size() < floor() + n) failOp("needs " + std::to_string(n) + " values on the stack");
        Value* v = make(Kind::Tuple);
        spend(n);
        v->items.assign(stack_.end() - static_cast<std::ptrdiff_t>(n), stack_.end());
        stack_.resize(stack_.size() - n);
        push(v);
        break;
      }
      case 'd': {  // DICT
        std::vector<Value*> items = popMark();
        if (items.size() % 2) failOp("needs key-value pairs, found an odd number of values");
        Value* v = make(Kind::Dict);
        for (std::size_t k = 0; k < items.size(); k += 2) setItem(v, items[k], items[k + 1]);
        push(v);
        break;
      }
      case 'J': {
        Value* v = make(Kind::Int);
        v->i = static_cast<std::int32_t>(static_cast<std::uint32_t>(readLE(4, "integer")));
        push(v);
        break;
      }
      case 'K':
      case 'M': {
        Value* v = make(Kind::Int);
        v->i = static_cast<std::int64_t>(readLE(op_ == 'K' ? 1 : 2, "integer"));
        push(v);
        break;
      }
      case 0x8a:
        push(readInt(readLE(1, "integer length")));
        break;
      case 0x8b: {
        std::uint64_t n = readLE(4, "integer length");
        if (n & 0x80000000u) failOp("negative integer length");
        push(readInt(n));
        break;
      }
      case 'G': {
        std::uint64_t bits = 0;
        const std::byte* p = take(8, "float");
        for (int k = 0; k < 8; ++k) bits = (bits << 8) | std::to_integer<std::uint64_t>(p[k]);  // big-endian
        Value* v = make(Kind::Float);
        v->f = std::bit_cast<double>(bits);
        push(v);
        break;
      }
      case 'X':
      case 0x8c:
      case 0x8d:
      case 'B':
      case 'C':
      case 0x8e:
      case 'T':
      case 'U': {
        int width = (op_ == 0x8c || op_ == 'C' || op_ == 'U') ? 1 : (op_ == 0x8d || op_ == 0x8e) ? 8 : 4;
        std::uint64_t n = readLE(width, "length");
        if (op_ == 'T' && (n & 0x80000000u)) failOp("negative string length");
        const std::byte* p = take(n, "string");
        Value* v = make(op_ == 'B' || op_ == 'C' || op_ == 0x8e ? Kind::Bytes : Kind::String);
        v->s.assign(reinterpret_cast<const char*>(p), static_cast<std::size_t>(n));
        push(v);
        break;
      }
      case 'N':
        push(make(Kind::None));
        break;
      case 0x88:
      case 0x89: {
        Value* v = make(Kind::Bool);
        v->b = op_ == 0x88;
        push(v);
        break;
      }
      case 'q':
        memoPut(readLE(1, "memo index"), top());
        break;
      case 'r':
        memoPut(readLE(4, "memo index"), top());
        break;
      case 0x94:
        memoPut(memo_.size(), top());
        break;
      case 'h':
        push(memoGet(readLE(1, "memo index")));
        break;
      case 'j':
        push(memoGet(readLE(4, "memo index")));
        break;
      case 'a': {
        Value* item = pop();
        Value* list = top();
        if (list->kind != Kind::List) failOp("expected a list to append to, got " + describe(list));
        spend(1);
        list->items.push_back(item);
        break;
      }
      case 'e': {
        std::vector<Value*> items = popMark();
        Value* list = top();
        if (list->kind != Kind::List) failOp("expected a list to append to, got " + describe(list));
        spend(items.size());
        list->items.insert(list->items.end(), items.begin(), items.end());
        break;
      }
      case 0x90: {  // ADDITEMS
        std::vector<Value*> items = popMark();
        Value* set = top();
        if (set->kind != Kind::Set) failOp("expected a set to add to, got " + describe(set));
        spend(items.size());
        set->items.insert(set->items.end(), items.begin(), items.end());
        break;
      }
      case 's': {
        Value* value = pop();
        Value* key = pop();
        Value* dict = top();
        if (dict->kind != Kind::Dict) failOp("expected a dict to set an item of, got " + describe(dict));
        setItem(dict, key, value);
        break;
      }
      case 'u': {
        std::vector<Value*> items = popMark();
        Value* dict = top();
        if (dict->kind != Kind::Dict) failOp("expected a dict to set items of, got " + describe(dict));
        if (items.size() % 2) failOp("needs key-value pairs, found an odd number of values");
        for (std::size_t k = 0; k < items.size(); k += 2) setItem(dict, items[k], items[k + 1]);
        break;
      }
      case 'c': {
        std::string module = readLine("module name");
        std::string name = readLine("global name");
        push(makeGlobal(globalName(module, name)));
        break;
      }
      case 0x93: {
        Value* name = pop();
        Value* module = pop();
        if (module->kind != Kind::String || name->kind != Kind::String)
          failOp("expected a module and a name (strings), got " + describe(module) + " and " + describe(name));
        push(makeGlobal(globalName(module->s, name->s)));
        break;
      }
      case 'i': {  // INST: instantiates the global it names; never needed by torch.save or pickle protocol >= 2
        std::string module = readLine("module name");
        std::string name = readLine("class name");
        const std::string global = globalName(module, name);
        ruleOf(global);
        failOp("global " + oneLine(global) + " may not be instantiated by INST (a protocol-0 form no checkpoint uses)");
      }
      case 'o': {  // OBJ: the class is the first value after the MARK
        std::vector<Value*> items = popMark();
        if (!items.empty() && items[0]->kind == Kind::Global)
          failOp("global " + oneLine(items[0]->s) +
                 " may not be instantiated by OBJ (a protocol-1 form no checkpoint uses)");
        failOp("instantiation by OBJ is refused (a protocol-1 form no checkpoint uses)");
      }
      case 'R':
        reduce();
        break;
      case 0x81: {
        Value* args = pop();
        Value* cls = pop();
        newObj(cls, args);
        break;
      }
      case 0x92: {
        Value* kwargs = pop();
        Value* args = pop();
        Value* cls = pop();
        if (kwargs->kind != Kind::Dict) failOp("expected keyword arguments (a dict), got " + describe(kwargs));
        newObj(cls, args);
        break;
      }
      case 'b':
        build();
        break;
      case 'Q': {
        Value* pid = pop();
        if (!policy_.persistentLoad) failOp("persistent ids are not allowed here");
        Value* v = make(Kind::PersistentId);
        v->args = pid;
        push(policy_.persistentLoad(v, base_ + opAt_));
        break;
      }
      default: {
        const char* name = opcodeName(op_);
        if (name) failOp("opcode not supported by this reader (torch.save and pickle.dump never need it)");
        fail("unknown opcode " + hexByte(op_));
      }
    }
  }
}

Pickle parse(std::span<const std::byte> bytes, const std::string& context, const Policy& policy,
             std::size_t baseOffset) {
  Machine m(bytes, context, policy, baseOffset);
  return m.run();
}

}  // namespace txl::frontend::pickle
