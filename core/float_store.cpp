// core/float_store.cpp: FloatStore.
#include "core/float_store.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <new>
#include <utility>

#include "core/error.h"

namespace arch {

FloatStore::FloatStore(std::vector<float> values) : memory_(std::move(values)), data_(memory_.data()), size_(memory_.size()) {}

FloatStore FloatStore::zeros(std::size_t n) {
    FloatStore s;
    if (n == 0) return s;
    void* at = ::mmap(nullptr, n * sizeof(float), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (at == MAP_FAILED) throw std::bad_alloc();
    s.data_ = static_cast<float*>(at);
    s.size_ = n;
    s.anonymous_ = true;
    return s;
}

FloatStore FloatStore::within(std::vector<std::byte> bytes, std::size_t at, std::size_t n) {
    if (at > bytes.size() || n > (bytes.size() - at) / sizeof(float))
        throw Error("floats beyond the end of their buffer");
    if (reinterpret_cast<std::uintptr_t>(bytes.data() + at) % alignof(float) != 0)
        throw Error("floats not aligned in their buffer");
    FloatStore s;
    s.bytes_ = std::move(bytes);
    s.data_ = reinterpret_cast<float*>(s.bytes_.data() + at);
    s.size_ = n;
    return s;
}

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
    const bool in_vector = !other.mapped_ && !other.anonymous_ && other.bytes_.empty();
    memory_ = std::move(other.memory_);
    bytes_ = std::move(other.bytes_);  // a vector's buffer moves with it: data_ stays valid
    data_ = in_vector ? memory_.data() : other.data_;
    size_ = other.size_;
    mapped_ = other.mapped_;
    anonymous_ = other.anonymous_;
    other.data_ = nullptr;
    other.size_ = 0;
    other.mapped_ = false;
    other.anonymous_ = false;
    return *this;
}

void FloatStore::release() const {
    if (mapped_) ::madvise(data_, size_ * sizeof(float), MADV_DONTNEED);  // shared: the data stays in the file
}

void FloatStore::reset() noexcept {
    if (mapped_ || anonymous_) ::munmap(data_, size_ * sizeof(float));
    memory_.clear();
    bytes_.clear();
    data_ = nullptr;
    size_ = 0;
    mapped_ = false;
    anonymous_ = false;
}

}  // namespace arch
