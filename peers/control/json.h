// peers/control/json.h: the little JSON the control API needs: a writer that escapes strings and
// prints numbers (NaN/Inf become null), and a strict parser for request bodies into a Value tree.
// The parser throws arch::Error with the offset of the problem; it limits nesting depth (64).
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

namespace arch::json {

std::string quote(const std::string& s);  // "..." with JSON escapes
std::string number(double v);             // shortest round-trip form; null for NaN/Inf

struct Value {
    enum class Kind { null, boolean, number, string, array, object };
    Kind kind = Kind::null;
    bool b = false;
    double n = 0;
    std::string s;
    std::vector<Value> items;               // array
    std::map<std::string, Value> fields;    // object

    bool is(Kind k) const { return kind == k; }
    const Value* get(const std::string& key) const;  // object field or nullptr
};

Value parse(const std::string& text);  // throws arch::Error on malformed input or trailing text

// Builds one JSON object, field by field, in order.
class Object {
public:
    Object& raw(const std::string& key, const std::string& json_text);
    Object& str(const std::string& key, const std::string& v) { return raw(key, quote(v)); }
    Object& num(const std::string& key, double v) { return raw(key, number(v)); }
    Object& boolean(const std::string& key, bool v) { return raw(key, v ? "true" : "false"); }
    std::string done() const { return "{" + body_ + "}"; }

private:
    std::string body_;
};

}  // namespace arch::json
