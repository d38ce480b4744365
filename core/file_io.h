// core/file_io.h: whole-file reads and atomic writes (write PATH.tmp, fsync, rename), so that a
// failed or interrupted write never replaces a good file. Errors name the path and the cause.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace arch {

std::vector<uint8_t> read_file(const std::string& path);
void write_file_atomic(const std::string& path, std::span<const uint8_t> bytes);
bool file_exists(const std::string& path);

}  // namespace arch
