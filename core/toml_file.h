// core/toml_file.h: how Archipelago reads its TOML files (run.toml, invites, key files) with toml++:
// every error names the file and the line. A parse error, an unknown key or section (with the closest
// known key suggested), a wrong type and a value out of range all read "SOURCE:LINE: ...".
// It checks and reports; toml++ does the parsing.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <toml++/toml.h>

#include "core/named_enum.h"

namespace arch::toml_file {

toml::table parse(const std::string& text, const std::string& source);  // throws arch::Error

// "SOURCE:LINE" of a node (or of its key), "SOURCE" where toml++ knows no position.
std::string where(const std::string& source, const toml::source_region& region);

// Typed reads of one table (the whole file, or one [section] of it). Each key read is remembered;
// finish() refuses every key that was not read, naming it and the closest known one.
class Fields {
public:
    // section: "" for the top level of the file, else the section's name (used in messages).
    Fields(const toml::table& table, std::string source, std::string section);

    // Each leaves `out` unchanged when the key is absent; throws arch::Error on a wrong type or range.
    void text(const std::string& key, std::string& out);
    void text_choice(const std::string& key, std::string& out, const std::vector<std::string>& choices);
    // A text choice read into an enum (core/named_enum.h): one of `names`' texts.
    template <class E>
    void choice(const std::string& key, E& out, const EnumNames<E>& names) {
        std::vector<std::string> texts;
        for (const auto& [text, value] : names) texts.push_back(text);
        std::string v = name_in(names, out);
        text_choice(key, v, texts);
        out = parse_named(names, v, qualified(key));
    }
    void texts(const std::string& key, std::vector<std::string>& out, std::size_t most);  // an array of at most `most` strings
    void boolean(const std::string& key, bool& out);
    void integer(const std::string& key, int64_t& out, int64_t lo, int64_t hi);
    void integer(const std::string& key, int& out, int lo, int hi);
    void number(const std::string& key, double& out, double lo, double hi, bool lo_open = false);
    void number(const std::string& key, float& out, double lo, double hi, bool lo_open = false);
    bool has(const std::string& key) const { return table_.contains(key); }
    bool has_text(const std::string& key) const { return table_.contains(key) && table_.get(key)->is_string(); }
    void require(const std::string& key) const;  // throws when absent
    std::string where(const std::string& key) const;  // "SOURCE:LINE" of the key, or "SOURCE"
    [[noreturn]] void fail(const std::string& key, const std::string& problem) const;  // "SOURCE:LINE: section.key problem"

    void finish() const;  // throws on any key not read, with a suggestion

private:
    const toml::node* find(const std::string& key);
    std::string qualified(const std::string& key) const { return section_.empty() ? key : section_ + "." + key; }

    const toml::table& table_;
    std::string source_, section_;
    std::vector<std::string> known_;
};

// The sections of a file: throws on a top-level key that is not a table, or a section not in `known`.
void check_sections(const toml::table& file, const std::string& source, const std::vector<std::string>& known);

}  // namespace arch::toml_file
