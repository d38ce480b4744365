// peers/control/token.h: the control API's bearer token: a random secret in a file only its owner
// may read (mode 0600, created on first use), and a comparison that takes the same time wherever the
// strings differ. A token file readable by group or others is refused, like an ssh key.
#pragma once

#include <string>

namespace arch {

// $ARCH_TOKEN_FILE, else ~/.config/archipelago/token.
std::string default_token_file();
// Reads the token (trimmed); creates the file (and its folder, 0700) with a fresh random token if
// missing. Throws arch::Error if the file is group/other-readable or empty.
std::string load_or_create_token(const std::string& path);
// Reads an existing token file (the `status` client): same checks, never creates.
std::string load_token(const std::string& path);
bool token_equal(const std::string& a, const std::string& b);  // constant time in the contents

}  // namespace arch
