// core/file_io.h: whole-file reads and atomic writes (write PATH.tmp, fsync, rename), so that a
// failed or interrupted write never replaces a good file. Errors name the path and the cause.
// Writes set an explicit mode on the temporary file before any byte lands, so a secret never exists
// with looser permissions, even for a moment.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <limits>
#include <span>
#include <string>
#include <vector>

namespace arch {

// Refuses files over max_bytes (small text files: a wrong path must not read a whole disk image).
std::vector<std::byte> read_file(const std::string& path, std::size_t max_bytes = std::numeric_limits<std::size_t>::max());
std::string read_text_file(const std::string& path, std::size_t max_bytes = 1 << 20);
void write_file_atomic(const std::string& path, std::span<const std::byte> bytes, mode_t mode = 0644);
// The same from parts written one after another, so a caller need not gather them into one buffer.
void write_file_atomic(const std::string& path, std::span<const std::span<const std::byte>> parts, mode_t mode = 0644);
// A file that replaces PATH only when whole: its bytes go to PATH.tmp, at any offsets and from any
// thread in turn (a checkpoint's parts are written by whoever holds them), and commit() flushes it to
// disk and renames it over PATH. Dropped before commit, the temporary file is removed and PATH is as
// it was. The whole pages of a large write (1 MiB or more) go around the page cache (O_DIRECT, through
// an aligned buffer of the file's own): a checkpoint of P bytes is then not copied into the cache, nor
// written back and dropped from it later, which took more CPU than the rest of a checkpoint. Where the
// file system refuses O_DIRECT (tmpfs on older kernels) every write is buffered.
class AtomicFile {
public:
    explicit AtomicFile(const std::string& path, mode_t mode = 0644);
    ~AtomicFile();
    AtomicFile(const AtomicFile&) = delete;
    AtomicFile& operator=(const AtomicFile&) = delete;

    void write_at(uint64_t offset, std::span<const std::byte> bytes);
    void commit();

private:
    [[noreturn]] void fail(const std::string& why);
    void write_buffered(uint64_t offset, std::span<const std::byte> bytes);
    void write_direct(uint64_t offset, std::span<const std::byte> bytes);  // offset and size in whole pages
    void stop_direct();

    std::string path_, tmp_;
    int fd_ = -1;
    int direct_fd_ = -1;  // the same file opened with O_DIRECT; -1 where refused
    // Page-aligned, mapped at the first direct write and unmapped with the file: straight from the
    // kernel, so that malloc's arenas and its mmap threshold never see it (8 MiB blocks freed by the
    // writer thread grew the host's arenas by tens of MB in test_insider_transfers).
    std::byte* bounce_ = nullptr;
};

void write_text_file_atomic(const std::string& path, const std::string& text, mode_t mode = 0644);
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
