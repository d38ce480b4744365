// net/allow_list.cpp: parsing and writing the allow-list file.
#include "net/allow_list.h"

#include <sstream>

#include "core/error.h"
#include "core/file_io.h"
#include "net/keys.h"

namespace arch::net {

AllowList AllowList::load(const std::string& path) {
    return parse(read_text_file(path, 16 << 20), "allow-list '" + path + "'");
}

AllowList AllowList::parse(const std::string& text, const std::string& what) {
    AllowList list;
    std::istringstream in(text);
    std::string line;
    int number = 0;
    while (std::getline(in, line)) {
        ++number;
        if (!line.empty() && line.back() == '\r') line.pop_back();
        const auto begin = line.find_first_not_of(" \t");
        if (begin == std::string::npos) continue;
        // Z85 has no space, so "# ..." and "#" alone can never be a key: they are comments.
        if (line.compare(begin, 2, "# ") == 0 || line.substr(begin) == "#") continue;
        const auto key_end = line.find_first_of(" \t", begin);
        const std::string key =
            line.substr(begin, key_end == std::string::npos ? std::string::npos : key_end - begin);
        std::string name;
        if (key_end != std::string::npos) {
            const auto name_begin = line.find_first_not_of(" \t", key_end);
            if (name_begin != std::string::npos) {
                const auto name_end = line.find_last_not_of(" \t");
                name = line.substr(name_begin, name_end - name_begin + 1);
            }
        }
        const std::string where = what + " line " + std::to_string(number);
        check_public_key(key, where);
        if (list.contains(key))
            throw Error(where + ": key " + fingerprint(key) + " is listed twice");
        list.names_[key] = name;
    }
    return list;
}

std::string AllowList::to_text() const {
    std::string text = "# archipelago allow-list: one peer per line, 'Z85-public-key name'\n";
    for (const auto& [key, name] : names_) text += key + (name.empty() ? "" : " " + name) + "\n";
    return text;
}

void AllowList::save(const std::string& path) const {
    write_text_file_atomic(path, to_text(), 0644);
}

void AllowList::add(const std::string& public_key, const std::string& name) {
    check_public_key(public_key, "allow-list key");
    if (name.find_first_of("\r\n") != std::string::npos)
        throw Error("allow-list name must be one line: '" + name + "'");
    names_[public_key] = name;
}

bool AllowList::remove(const std::string& public_key) {
    return names_.erase(public_key) > 0;
}

bool AllowList::contains(const std::string& public_key) const {
    return names_.count(public_key) > 0;
}

std::string AllowList::name_of(const std::string& public_key) const {
    const auto it = names_.find(public_key);
    return it == names_.end() ? "" : it->second;
}

std::vector<std::string> AllowList::keys() const {
    std::vector<std::string> out;
    for (const auto& entry : names_) out.push_back(entry.first);
    return out;
}

}  // namespace arch::net
