// net/text_file.h (internal to net/): the small text files net/ keeps (keys, allow-list, invite).
// Writes are atomic (PATH.tmp, fsync, rename) with an explicit mode, so a secret never exists with
// looser permissions even for a moment. Reads refuse files over a size cap (these files are tiny).
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <map>
#include <span>
#include <string>

namespace arch::net::detail {

std::string read_text_file(const std::string& path, std::size_t max_bytes = 1 << 20);
void write_text_file_atomic(const std::string& path, const std::string& text, mode_t mode);

// "name = value" lines; blank lines and lines starting with "#" are skipped. Errors name the file
// (`what`) and the line. Duplicate names are an error.
std::map<std::string, std::string> parse_fields(const std::string& text, const std::string& what);

std::string to_hex(std::span<const uint8_t> bytes);

}  // namespace arch::net::detail
