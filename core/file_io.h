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

// An exclusive advisory lock (flock) on PATH, created if missing, held until destruction: it makes
// "check, then prepare" of a shared folder safe when several processes (islands) start together.
class FileLock {
public:
    explicit FileLock(const std::string& path);
    ~FileLock();
    FileLock(const FileLock&) = delete;
    FileLock& operator=(const FileLock&) = delete;

private:
    int fd_ = -1;
};

}  // namespace arch
