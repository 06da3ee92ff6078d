// ir/parser.cpp - a small recursive-descent parser for the text form.
#include "ir/parser.h"

#include <cctype>
#include <charconv>
#include <cmath>
#include <limits>
#include <map>

#include "ir/check.h"

namespace txl::ir {

namespace {

class Parser {
 public:
  Parser(std::string_view text, std::string source) : text_(text), source_(std::move(source)) {}

  Graph parseGraph() {
    expectWord("graph");
    expect('@');
    Graph g(ident("graph name"));
    expect('{');
    while (true) {
      skipSpace();
      if (peek() == '}') break;
      if (atEnd()) error("expected an op or '}'");
      parseStatement(g);
    }
    expect('}');
    skipSpace();
    if (!atEnd()) error("expected end of input");
    return g;
  }

 private:
  // --- lexing -------------------------------------------------------------
  bool atEnd() const { return pos_ >= text_.size(); }
  char peek() const { return atEnd() ? '\0' : text_[pos_]; }
  void skipSpace() {
    while (!atEnd()) {
      char c = text_[pos_];
      if (c == '\n') {
        ++line_;
        lineStart_ = ++pos_;
      } else if (std::isspace(static_cast<unsigned char>(c))) {
        ++pos_;
      } else if (c == '/' && pos_ + 1 < text_.size() && text_[pos_ + 1] == '/') {
        while (!atEnd() && text_[pos_] != '\n') ++pos_;
      } else {
        break;
      }
    }
  }
  std::string found() const {
    if (atEnd()) return "end of input";
    std::size_t end = pos_;
    while (end < text_.size() && end - pos_ < 12 && !std::isspace(static_cast<unsigned char>(text_[end]))) ++end;
    // Control characters escaped: the message must stay one line.
    return "'" + oneLine(std::string(text_.substr(pos_, std::max<std::size_t>(end - pos_, 1)))) + "'";
  }
  [[noreturn]] void error(const std::string& what) const {
    throw Error(source_ + ":" + std::to_string(line_) + ":" + std::to_string(pos_ - lineStart_ + 1) + ": " + what +
                ", found " + found());
  }
  void expect(char c) {
    skipSpace();
    if (peek() != c) error(std::string("expected '") + c + "'");
    ++pos_;
  }
  bool accept(char c) {
    skipSpace();
    if (peek() != c) return false;
    ++pos_;
    return true;
  }
  static bool identChar(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.'; }
  std::string ident(const char* what) {
    skipSpace();
    std::size_t start = pos_;
    while (!atEnd() && identChar(text_[pos_])) ++pos_;
    if (start == pos_) error(std::string("expected ") + what);
    return std::string(text_.substr(start, pos_ - start));
  }
  void expectWord(const char* word) {
    std::size_t save = pos_;
    skipSpace();
    save = pos_;
    if (ident(word) != word) {
      pos_ = save;
      error(std::string("expected '") + word + "'");
    }
  }
  std::int64_t integer(const char* what) {
    skipSpace();
    std::int64_t value = 0;
    auto [end, ec] = std::from_chars(text_.data() + pos_, text_.data() + text_.size(), value);
    if (ec != std::errc()) error(std::string("expected ") + what);
    pos_ = end - text_.data();
    return value;
  }
  std::string stringLiteral() {
    expect('"');
    std::string s;
    while (true) {
      if (atEnd() || peek() == '\n') error("unterminated string");
      char c = text_[pos_++];
      if (c == '"') break;
      if (c == '\\') {
        if (atEnd()) error("unterminated string");
        char e = text_[pos_++];
        s += e == 'n' ? '\n' : e;
      } else {
        s += c;
      }
    }
    return s;
  }

  // --- grammar ------------------------------------------------------------
  int valueRef() {
    expect('%');
    std::int64_t n = integer("a value number");
    if (n < 0 || n > std::numeric_limits<int>::max()) error("value number out of range");
    return static_cast<int>(n);
  }

  AttrValue attrValue() {
    skipSpace();
    char c = peek();
    if (c == '"') return stringLiteral();
    if (c == '[') {
      ++pos_;
      std::vector<std::int64_t> list;
      if (!accept(']')) {
        do list.push_back(integer("an integer"));
        while (accept(','));
        expect(']');
      }
      return list;
    }
    if (std::isalpha(static_cast<unsigned char>(c))) {
      std::string word = ident("a value");
      if (word == "true") return true;
      if (word == "false") return false;
      if (word == "inf") return std::numeric_limits<double>::infinity();
      if (word == "nan") return std::numeric_limits<double>::quiet_NaN();
      error("expected an attribute value");
    }
    // A number: a float if it has '.', 'e' or is -inf.
    std::size_t start = pos_;
    if (text_.substr(pos_, 4) == "-inf") {
      pos_ += 4;
      return -std::numeric_limits<double>::infinity();
    }
    while (!atEnd() &&
           (std::isalnum(static_cast<unsigned char>(peek())) || peek() == '.' || peek() == '-' || peek() == '+'))
      ++pos_;
    std::string_view token = text_.substr(start, pos_ - start);
    if (token.empty()) error("expected an attribute value");
    const char* first = token.data();
    const char* last = token.data() + token.size();
    if (token.find_first_of(".eE") != std::string_view::npos) {
      double d = 0;
      auto [end, ec] = std::from_chars(first, last, d);
      if (ec != std::errc() || end != last) {
        pos_ = start;
        error("expected a number");
      }
      return d;
    }
    std::int64_t i = 0;
    auto [end, ec] = std::from_chars(first, last, i);
    if (ec != std::errc() || end != last) {
      pos_ = start;
      error("expected a number");
    }
    return i;
  }

  TensorType tensorType() {
    std::size_t save = (skipSpace(), pos_);
    std::string name = ident("a type");
    auto dtype = parseDType(name);
    if (!dtype) {
      pos_ = save;
      error("expected a dtype (f32, bf16, i64)");
    }
    expect('[');
    Shape shape;
    if (!accept(']')) {
      do {
        std::int64_t d = integer("a dimension");
        if (d < 0) error("expected a non-negative dimension");
        shape.push_back(d);
      } while (accept(','));
      expect(']');
    }
    TensorType t{*dtype, shape};
    // Guard the element count against overflow before anyone allocates it.
    std::int64_t n = 1;
    for (auto d : shape)
      if (d != 0 && n > std::numeric_limits<std::int64_t>::max() / 16 / d) error("tensor type too large");
      else n *= d;
    return t;
  }

  void parseStatement(Graph& g) {
    std::optional<int> result;
    skipSpace();
    std::size_t stmtLine = line_;
    if (peek() == '%') {
      result = valueRef();
      expect('=');
    }
    std::size_t opPos = (skipSpace(), pos_);
    std::string opName = ident("an op name");
    auto kind = parseOpKind(opName);
    if (!kind) {
      pos_ = opPos;
      error("unknown op '" + clip(opName) + "'");
    }
    std::vector<Node> operands;
    expect('(');
    if (!accept(')')) {
      do {
        std::size_t refPos = (skipSpace(), pos_);
        int ref = valueRef();
        auto it = values_.find(ref);
        if (it == values_.end()) {
          pos_ = refPos;
          error("use of undefined value %" + std::to_string(ref));
        }
        operands.push_back(it->second);
      } while (accept(','));
      expect(')');
    }
    Attrs attrs;
    if (accept('{')) {
      do {
        std::string key = ident("an attribute name");
        if (attrs.has(key)) error("duplicate attribute '" + clip(key) + "'");
        expect('=');
        attrs.set(key, attrValue());
      } while (accept(','));
      expect('}');
    }
    std::optional<TensorType> type;
    if (accept(':')) type = tensorType();
    const OpInfo& info = opInfo(*kind);
    if (info.hasResult != result.has_value())
      error(info.hasResult ? "op '" + opName + "' produces a value: write '%N = " + opName + "(...)'"
                           : "op '" + opName + "' produces no value");
    if (!info.hasResult && type) error("op '" + opName + "' has no result type");
    Node n;
    try {
      n = g.add(*kind, operands, attrs, type);
    } catch (const Error& e) {
      throw Error(source_ + ":" + std::to_string(stmtLine) + ": " + e.what());
    }
    if (result) {
      if (values_.count(*result)) error("value %" + std::to_string(*result) + " is defined twice");
      values_[*result] = n;
    }
  }

  std::string_view text_;
  std::string source_;
  std::size_t pos_ = 0;
  std::size_t line_ = 1;
  std::size_t lineStart_ = 0;
  std::map<int, Node> values_;
};

}  // namespace

Graph parse(std::string_view text, const std::string& sourceName) { return Parser(text, sourceName).parseGraph(); }

}  // namespace txl::ir
