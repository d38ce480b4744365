// peers/blob.h: the bytes of a blob a Link sends (an update, a pseudo-gradient, the state of θ): one
// buffer of its own, or pieces that lie in memory something else keeps alive. The host's state of θ
// is a head, θ where the host keeps it (a copy-on-write snapshot) and a tail, sent as one blob and
// never copied into one buffer.
#pragma once

#include <cstddef>
#include <functional>
#include <memory>
#include <span>
#include <vector>

namespace arch {

class Blob {
public:
    // `release`, when given, takes the buffer back as the blob dies (a codec's recycler: its next
    // encode writes in the same pages).
    explicit Blob(std::vector<std::byte> bytes, std::function<void(std::vector<std::byte>&&)> release = {});
    ~Blob();
    // The pieces, one after another; `keeps` holds their memory for as long as the blob lives.
    Blob(std::vector<std::span<const std::byte>> pieces, std::shared_ptr<const void> keeps);
    Blob(const Blob&) = delete;
    Blob& operator=(const Blob&) = delete;

    std::size_t size() const { return size_; }
    const std::vector<std::span<const std::byte>>& pieces() const { return pieces_; }
    std::vector<std::byte> joined() const;  // the bytes in one buffer (a copy)

private:
    std::vector<std::byte> own_;
    std::function<void(std::vector<std::byte>&&)> release_;
    std::shared_ptr<const void> keeps_;
    std::vector<std::span<const std::byte>> pieces_;
    std::size_t size_ = 0;
};

// A large payload queued for one or more peers: one immutable blob, shared by every queue it is on.
using SharedBlob = std::shared_ptr<const Blob>;
inline SharedBlob share_blob(std::vector<std::byte> bytes, std::function<void(std::vector<std::byte>&&)> release = {}) {
    return std::make_shared<const Blob>(std::move(bytes), std::move(release));
}

}  // namespace arch
