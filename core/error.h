// core/error.h: the one exception type Archipelago throws for anything a user can act on.
// Throw at the point of detection with a message that names the thing, what was expected and what
// was found; catch once, at the program's edge (the CLI prints it and exits non-zero).
#pragma once

#include <stdexcept>
#include <string>

namespace arch {

class Error : public std::runtime_error {
public:
    explicit Error(const std::string& message) : std::runtime_error(message) {}
};

}  // namespace arch
