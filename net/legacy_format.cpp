// net/legacy_format.cpp: TOML first; on a parse error, the pre-TOML shape gets its migration command.
#include "net/legacy_format.h"

#include <regex>

#include "core/error.h"
#include "core/toml_file.h"

namespace arch::net {

toml::table parse_net_file(const std::string& text, const std::string& path, const std::string& kind) {
    try {
        return toml_file::parse(text, path);
    } catch (const Error&) {
        // A known field followed by a bare (unquoted) value is the old shape; TOML needs quotes.
        static const std::regex old_line(
            R"((^|\n)[ \t]*(public-key|secret-key|host-endpoint|host-public-key|run-id)[ \t]*=[ \t]*[^"' \t\r\n])");
        if (!std::regex_search(text, old_line)) throw;
        throw Error(kind + " '" + path + "' is in the pre-TOML format of archipelago 0.1; convert it in place with: " +
                    "sed -i -E 's/^([a-z-]+) = ([^\"].*)$/\\1 = \"\\2\"/' '" + path + "'");
    }
}

}  // namespace arch::net
