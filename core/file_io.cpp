// core/file_io.cpp: read_file and write_file_atomic over POSIX calls.
#include "core/file_io.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "core/error.h"

namespace arch {

std::vector<uint8_t> read_file(const std::string& path, std::size_t max_bytes) {
    std::FILE* f = std::fopen(path.c_str(), "rb");
    if (f == nullptr) throw Error("cannot open '" + path + "': " + std::strerror(errno));
    std::vector<uint8_t> bytes;
    uint8_t buffer[1 << 16];
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
    const std::vector<uint8_t> bytes = read_file(path, max_bytes);
    return std::string(bytes.begin(), bytes.end());
}

void write_file_atomic(const std::string& path, std::span<const uint8_t> bytes, mode_t mode) {
    const std::span<const uint8_t> one[] = {bytes};
    write_file_atomic(path, one, mode);
}

void write_file_atomic(const std::string& path, std::span<const std::span<const uint8_t>> parts, mode_t mode) {
    const std::string tmp = path + ".tmp";
    ::unlink(tmp.c_str());
    const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode);
    if (fd < 0) throw Error("cannot create '" + tmp + "': " + std::strerror(errno));
    auto fail = [&](const std::string& why) {
        ::close(fd);
        ::unlink(tmp.c_str());
        throw Error("cannot write '" + tmp + "': " + why);
    };
    if (::fchmod(fd, mode) != 0) fail(std::strerror(errno));  // the umask may have narrowed it
    for (const std::span<const uint8_t> bytes : parts) {
        std::size_t done = 0;
        while (done < bytes.size()) {
            const ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
            if (n < 0) {
                if (errno == EINTR) continue;
                fail(std::strerror(errno));
            }
            done += static_cast<std::size_t>(n);
        }
    }
    if (::fsync(fd) != 0) fail(std::string("flush failed: ") + std::strerror(errno));
    if (::close(fd) != 0) {
        ::unlink(tmp.c_str());
        throw Error("cannot flush '" + tmp + "'");
    }
    if (::rename(tmp.c_str(), path.c_str()) != 0) {
        const std::string why = std::strerror(errno);
        ::unlink(tmp.c_str());
        throw Error("cannot rename '" + tmp + "' to '" + path + "': " + why);
    }
}

void write_text_file_atomic(const std::string& path, const std::string& text, mode_t mode) {
    write_file_atomic(path, std::span(reinterpret_cast<const uint8_t*>(text.data()), text.size()), mode);
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
