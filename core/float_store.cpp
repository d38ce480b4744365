// core/float_store.cpp: FloatStore.
#include "core/float_store.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <utility>

#include "core/error.h"

namespace arch {

FloatStore::FloatStore(std::vector<float> values) : memory_(std::move(values)), data_(memory_.data()), size_(memory_.size()) {}

FloatStore FloatStore::on_disk(const std::string& path, std::span<const float> values) {
    FloatStore s = on_disk(path, values.size());
    if (!values.empty()) std::memcpy(s.data_, values.data(), values.size() * sizeof(float));
    s.release();
    return s;
}

FloatStore FloatStore::on_disk(const std::string& path, std::size_t n) {
    const auto fail = [&](const std::string& what) { return Error("θ on disk: " + what + " '" + path + "': " + std::strerror(errno)); };
    const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd < 0) throw fail("cannot create");
    const std::size_t bytes = n * sizeof(float);
    // Blocks reserved now: a full disk is this error, not a SIGBUS when a page is first written.
    if (const int err = bytes > 0 ? ::posix_fallocate(fd, 0, static_cast<off_t>(bytes)) : 0; err != 0) {
        errno = err;
        const Error e = fail("cannot reserve " + std::to_string(bytes) + " bytes for");
        ::close(fd);
        ::unlink(path.c_str());
        throw e;
    }
    void* at = bytes > 0 ? ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0) : nullptr;
    const int mmap_errno = errno;
    ::close(fd);  // the mapping keeps the file
    ::unlink(path.c_str());
    if (at == MAP_FAILED) {
        errno = mmap_errno;
        throw fail("cannot map");
    }
    FloatStore s;
    s.data_ = bytes > 0 ? static_cast<float*>(at) : nullptr;
    s.size_ = n;
    s.mapped_ = bytes > 0;
    return s;
}

FloatStore::~FloatStore() { reset(); }

FloatStore::FloatStore(FloatStore&& other) noexcept { *this = std::move(other); }

FloatStore& FloatStore::operator=(FloatStore&& other) noexcept {
    if (this == &other) return *this;
    reset();
    memory_ = std::move(other.memory_);
    data_ = other.mapped_ ? other.data_ : memory_.data();
    size_ = other.size_;
    mapped_ = other.mapped_;
    other.data_ = nullptr;
    other.size_ = 0;
    other.mapped_ = false;
    return *this;
}

void FloatStore::release() const {
    if (mapped_) ::madvise(data_, size_ * sizeof(float), MADV_DONTNEED);  // shared: the data stays in the file
}

void FloatStore::reset() noexcept {
    if (mapped_) ::munmap(data_, size_ * sizeof(float));
    memory_.clear();
    data_ = nullptr;
    size_ = 0;
    mapped_ = false;
}

}  // namespace arch
