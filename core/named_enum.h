// core/named_enum.h: a setting's names (run.toml's, a flag's, a log's) beside its enum, in one table per
// enum, so that the text is parsed once where it is read and code compares values, never strings.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "core/error.h"

namespace arch {

template <class E>
using EnumNames = std::vector<std::pair<std::string, E>>;

// The value named `text`; throws arch::Error "unknown WHAT 'text' (a, b or c)".
template <class E>
E parse_named(const EnumNames<E>& names, const std::string& text, const std::string& what) {
    std::string list;
    for (std::size_t i = 0; i < names.size(); ++i) {
        if (names[i].first == text) return names[i].second;
        list += (i == 0 ? "" : i + 1 == names.size() ? " or " : ", ") + names[i].first;
    }
    throw Error("unknown " + what + " '" + text + "' (" + list + ")");
}

template <class E>
const std::string& name_in(const EnumNames<E>& names, E value) {
    for (const auto& [name, v] : names)
        if (v == value) return name;
    throw Error("a value with no name");  // every enumerator is in its table
}

}  // namespace arch
