// core/file_io.cpp: read_file and write_file_atomic over POSIX calls.
#include "core/file_io.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <utility>

#include "core/bytes.h"
#include "core/error.h"

namespace arch {

std::vector<std::byte> read_file(const std::string& path, std::size_t max_bytes) {
    std::FILE* f = std::fopen(path.c_str(), "rb");
    if (f == nullptr) throw Error("cannot open '" + path + "': " + std::strerror(errno));
    std::vector<std::byte> bytes;
    std::byte buffer[1 << 16];
    std::size_t got;
    while ((got = std::fread(buffer, 1, sizeof(buffer), f)) > 0) {
        bytes.insert(bytes.end(), buffer, buffer + got);
        if (bytes.size() > max_bytes) {
            std::fclose(f);
            throw Error("'" + path + "' is larger than " + std::to_string(max_bytes) + " bytes; is it the right file?");
        }
    }
    const bool failed = std::ferror(f) != 0;
    std::fclose(f);
    if (failed) throw Error("error reading '" + path + "'");
    return bytes;
}

std::string read_text_file(const std::string& path, std::size_t max_bytes) {
    const std::vector<std::byte> bytes = read_file(path, max_bytes);
    return std::string(reinterpret_cast<const char*>(bytes.data()), bytes.size());
}

void write_file_atomic(const std::string& path, std::span<const std::byte> bytes, mode_t mode) {
    const std::span<const std::byte> one[] = {bytes};
    write_file_atomic(path, one, mode);
}

void write_file_atomic(const std::string& path, std::span<const std::span<const std::byte>> parts, mode_t mode) {
    AtomicFile file(path, mode);
    uint64_t at = 0;
    for (const std::span<const std::byte> bytes : parts) {
        file.write_at(at, bytes);
        at += bytes.size();
    }
    file.commit();
}

namespace {
constexpr std::size_t kPage = 4096;               // O_DIRECT's alignment for offsets, sizes and memory
constexpr std::size_t kDirectFrom = 1u << 20;     // smaller writes stay buffered
constexpr std::size_t kBounceBytes = 8u << 20;    // the aligned buffer a direct write goes through
}  // namespace

AtomicFile::AtomicFile(const std::string& path, mode_t mode) : path_(path), tmp_(path + ".tmp") {
    ::unlink(tmp_.c_str());
    fd_ = ::open(tmp_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode);
    if (fd_ < 0) throw Error("cannot create '" + tmp_ + "': " + std::strerror(errno));
    if (::fchmod(fd_, mode) != 0) fail(std::strerror(errno));  // the umask may have narrowed it
    direct_fd_ = ::open(tmp_.c_str(), O_WRONLY | O_DIRECT | O_CLOEXEC);  // -1 (EINVAL) where unsupported
}

AtomicFile::~AtomicFile() {
    if (fd_ < 0) return;
    stop_direct();
    ::close(fd_);
    ::unlink(tmp_.c_str());
}

void AtomicFile::fail(const std::string& why) {
    stop_direct();
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
    ::unlink(tmp_.c_str());
    throw Error("cannot write '" + tmp_ + "': " + why);
}

void AtomicFile::stop_direct() {
    if (direct_fd_ >= 0) ::close(direct_fd_);
    direct_fd_ = -1;
    if (bounce_) ::munmap(bounce_, kBounceBytes);
    bounce_ = nullptr;
}

void AtomicFile::write_at(uint64_t offset, std::span<const std::byte> bytes) {
    if (fd_ < 0) throw Error("'" + tmp_ + "' is no longer open for writing");
    // The whole pages inside a large write go direct; the part pages at its ends stay buffered. A page
    // is never written both ways, as the parts of a file do not overlap.
    const uint64_t first = (offset + kPage - 1) / kPage * kPage, last = (offset + bytes.size()) / kPage * kPage;
    if (direct_fd_ < 0 || bytes.size() < kDirectFrom || last <= first) return write_buffered(offset, bytes);
    write_buffered(offset, bytes.first(first - offset));
    write_direct(first, bytes.subspan(first - offset, last - first));
    write_buffered(last, bytes.subspan(last - offset));
}

void AtomicFile::write_buffered(uint64_t offset, std::span<const std::byte> bytes) {
    std::size_t done = 0;
    while (done < bytes.size()) {
        const ssize_t n = ::pwrite(fd_, bytes.data() + done, bytes.size() - done, static_cast<off_t>(offset + done));
        if (n < 0) {
            if (errno == EINTR) continue;
            fail(std::strerror(errno));
        }
        done += static_cast<std::size_t>(n);
    }
}

void AtomicFile::write_direct(uint64_t offset, std::span<const std::byte> bytes) {
    if (!bounce_) {
        void* map = ::mmap(nullptr, kBounceBytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (map == MAP_FAILED) stop_direct();  // no memory for it: buffered
        else bounce_ = static_cast<std::byte*>(map);
    }
    std::size_t done = 0;
    while (done < bytes.size() && direct_fd_ >= 0) {
        const std::size_t n = std::min(kBounceBytes, bytes.size() - done);
        std::memcpy(bounce_, bytes.data() + done, n);
        const ssize_t wrote = ::pwrite(direct_fd_, bounce_, n, static_cast<off_t>(offset + done));
        if (wrote < 0 && errno == EINTR) continue;
        if (wrote < 0 && errno != EINVAL) fail(std::strerror(errno));
        if (wrote > 0) done += static_cast<std::size_t>(wrote) / kPage * kPage;
        if (wrote <= 0 || static_cast<std::size_t>(wrote) % kPage != 0) stop_direct();  // refused or ragged: buffered from here on
    }
    write_buffered(offset + done, bytes.subspan(done));
}

void AtomicFile::commit() {
    if (fd_ < 0) throw Error("'" + tmp_ + "' is no longer open for writing");
    stop_direct();
    if (::fsync(fd_) != 0) fail(std::string("flush failed: ") + std::strerror(errno));
    const int fd = std::exchange(fd_, -1);
    if (::close(fd) != 0) {
        ::unlink(tmp_.c_str());
        throw Error("cannot flush '" + tmp_ + "'");
    }
    if (::rename(tmp_.c_str(), path_.c_str()) != 0) {
        const std::string why = std::strerror(errno);
        ::unlink(tmp_.c_str());
        throw Error("cannot rename '" + tmp_ + "' to '" + path_ + "': " + why);
    }
}

void write_text_file_atomic(const std::string& path, const std::string& text, mode_t mode) {
    write_file_atomic(path, byte_view(text), mode);
}

bool file_exists(const std::string& path) {
    struct stat st;
    return ::stat(path.c_str(), &st) == 0;
}

FileLock::FileLock(const std::string& path) {
    fd_ = ::open(path.c_str(), O_RDWR | O_CREAT, 0644);
    if (fd_ < 0) throw Error("cannot create the lock file '" + path + "': " + std::strerror(errno));
    while (::flock(fd_, LOCK_EX) != 0) {
        if (errno != EINTR) {
            ::close(fd_);
            throw Error("cannot lock '" + path + "': " + std::strerror(errno));
        }
    }
}

FileLock::~FileLock() {
    if (fd_ >= 0) ::close(fd_);  // closing releases the lock
}

}  // namespace arch
