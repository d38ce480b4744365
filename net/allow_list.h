// net/allow_list.h: the host's list of peer public keys that may connect, as a text file of
// "Z85KEY name" lines ("# " starts a comment line). It knows nothing of sockets: HostSocket
// consults a copy of it from its ZAP handler. Names are for people (logs, GUI); identity is the key
// alone.
#pragma once

#include <map>
#include <string>
#include <vector>

namespace arch::net {

class AllowList {
  public:
    AllowList() = default;

    // Parses the file; errors name the line. A missing file is an error (use an empty AllowList
    // and save() to start one).
    static AllowList load(const std::string& path);
    static AllowList parse(const std::string& text, const std::string& what);
    void save(const std::string& path) const;  // atomic, mode 0644
    std::string to_text() const;

    // Adds or renames. Throws arch::Error on an invalid key or a name with a newline.
    void add(const std::string& public_key, const std::string& name);
    bool remove(const std::string& public_key);  // false when the key was not listed
    bool contains(const std::string& public_key) const;
    std::string name_of(const std::string& public_key) const;  // "" when not listed
    std::size_t size() const { return names_.size(); }
    std::vector<std::string> keys() const;

  private:
    std::map<std::string, std::string> names_;  // key -> name
};

}  // namespace arch::net
