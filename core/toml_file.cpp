// core/toml_file.cpp: toml++ parse errors and typed field reads with file:line messages.
#include "core/toml_file.h"

#include <cmath>
#include <sstream>

#include "core/error.h"
#include "core/spelling.h"

namespace arch::toml_file {

namespace {

const char* type_name(const toml::node& n) {
    if (n.is_string()) return "a string";
    if (n.is_integer()) return "an integer";
    if (n.is_floating_point()) return "a number";
    if (n.is_boolean()) return "a boolean";
    if (n.is_array()) return "an array";
    if (n.is_table()) return "a table";
    return "a date or time";
}

std::string show(double v) {
    std::ostringstream s;
    s << v;
    return s.str();
}

}  // namespace

toml::table parse(const std::string& text, const std::string& source) {
    try {
        return toml::parse(text, source);
    } catch (const toml::parse_error& e) {
        throw Error(where(source, e.source()) + ": not valid TOML: " + std::string(e.description()));
    }
}

std::string where(const std::string& source, const toml::source_region& region) {
    if (region.begin.line == 0) return source;
    return source + ":" + std::to_string(region.begin.line);
}

Fields::Fields(const toml::table& table, std::string source, std::string section)
    : table_(table), source_(std::move(source)), section_(std::move(section)) {}

const toml::node* Fields::find(const std::string& key) {
    known_.push_back(key);
    return table_.get(key);
}

std::string Fields::where(const std::string& key) const {
    for (const auto& [k, v] : table_)
        if (k.str() == key) return toml_file::where(source_, k.source());
    return source_;
}

void Fields::fail(const std::string& key, const std::string& problem) const {
    throw Error(where(key) + ": " + qualified(key) + " " + problem);
}

void Fields::require(const std::string& key) const {
    if (!table_.contains(key))
        throw Error(source_ + ": missing key '" + key + "'" + (section_.empty() ? "" : " in [" + section_ + "]"));
}

void Fields::text(const std::string& key, std::string& out) {
    const toml::node* n = find(key);
    if (!n) return;
    if (!n->is_string()) fail(key, std::string("must be a string, found ") + type_name(*n));
    out = n->as_string()->get();
}

void Fields::texts(const std::string& key, std::vector<std::string>& out, std::size_t most) {
    const toml::node* n = find(key);
    if (!n) return;
    if (!n->is_array()) fail(key, std::string("must be an array of strings, found ") + type_name(*n));
    const toml::array& a = *n->as_array();
    if (a.size() > most) fail(key, "holds " + std::to_string(a.size()) + " values, at most " + std::to_string(most));
    std::vector<std::string> v;
    for (const toml::node& item : a) {
        if (!item.is_string()) fail(key, std::string("must hold strings only, found ") + type_name(item));
        v.push_back(item.as_string()->get());
    }
    out = std::move(v);
}

void Fields::boolean(const std::string& key, bool& out) {
    const toml::node* n = find(key);
    if (!n) return;
    if (!n->is_boolean()) fail(key, std::string("must be true or false, found ") + type_name(*n));
    out = n->as_boolean()->get();
}

void Fields::text_choice(const std::string& key, std::string& out, const std::vector<std::string>& choices) {
    std::string v = out;
    text(key, v);
    if (!table_.contains(key)) return;
    bool ok = false;
    std::string list;
    for (const std::string& c : choices) {
        ok = ok || v == c;
        list += (list.empty() ? "" : ", ") + c;
    }
    if (!ok) fail(key, "must be one of " + list + ", found '" + v + "'" + did_you_mean(v, choices));
    out = v;
}

void Fields::integer(const std::string& key, int64_t& out, int64_t lo, int64_t hi) {
    const toml::node* n = find(key);
    if (!n) return;
    if (!n->is_integer()) fail(key, std::string("must be an integer, found ") + type_name(*n));
    const int64_t v = n->as_integer()->get();
    if (v < lo || v > hi)
        fail(key, "must be in [" + std::to_string(lo) + ", " + std::to_string(hi) + "], found " + std::to_string(v));
    out = v;
}

void Fields::integer(const std::string& key, int& out, int lo, int hi) {
    int64_t v = out;
    integer(key, v, lo, hi);
    out = static_cast<int>(v);
}

void Fields::number(const std::string& key, double& out, double lo, double hi, bool lo_open) {
    const toml::node* n = find(key);
    if (!n) return;
    double v = 0;
    if (n->is_floating_point()) v = n->as_floating_point()->get();
    else if (n->is_integer()) v = static_cast<double>(n->as_integer()->get());
    else fail(key, std::string("must be a number, found ") + type_name(*n));
    if (!std::isfinite(v) || v > hi || (lo_open ? v <= lo : v < lo))
        fail(key, "must be in " + std::string(lo_open ? "(" : "[") + show(lo) + ", " + show(hi) + "], found " + show(v));
    out = v;
}

void Fields::number(const std::string& key, float& out, double lo, double hi, bool lo_open) {
    double v = out;
    number(key, v, lo, hi, lo_open);
    out = static_cast<float>(v);
}

void Fields::finish() const {
    for (const auto& [k, v] : table_) {
        bool read = false;
        for (const std::string& known : known_) read = read || known == k.str();
        if (read) continue;
        throw Error(toml_file::where(source_, k.source()) + ": unknown key '" + std::string(k.str()) + "'" +
                    (section_.empty() ? "" : " in [" + section_ + "]") + did_you_mean(k.str(), known_));
    }
}

void check_sections(const toml::table& file, const std::string& source, const std::vector<std::string>& known) {
    for (const auto& [k, v] : file) {
        const std::string name(k.str());
        bool ok = false;
        for (const std::string& s : known) ok = ok || s == name;
        if (!ok) {
            const auto close = closest_spelling(name, known);
            throw Error(where(source, k.source()) + ": unknown " + (v.is_table() ? "section [" + name + "]" : "key '" + name + "'") +
                        (close ? " (did you mean [" + *close + "]?)" : ""));
        }
        if (!v.is_table())
            throw Error(where(source, k.source()) + ": '" + name + "' must be a section ([" + name + "]), found " +
                        type_name(v));
    }
}

}  // namespace arch::toml_file
