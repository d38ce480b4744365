// net/legacy_format.h (internal to net/): parses an invite or key file as TOML; one written before
// they became TOML ("name = value" with bare values) is refused with the one command that converts
// it in place. Only recognises the old shape; it reads no value.
#pragma once

#include <string>

#include <toml++/toml.h>

namespace arch::net {

// kind: "invite" or "key file", for the messages. Throws arch::Error.
toml::table parse_net_file(const std::string& text, const std::string& path, const std::string& kind);

}  // namespace arch::net
