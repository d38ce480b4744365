// net/payload.h: a received message's payload, held where it arrived. The bytes libzmq received (its
// message, kept alive by the Payload) are read in place, so a transfer's chunk is copied once, into
// its blob, and not first into a payload of its own; a Payload may also own plain bytes (tests, links
// in memory).
#pragma once

#include <cstddef>
#include <memory>
#include <span>
#include <utility>
#include <vector>

namespace arch::net {

class Payload {
  public:
    Payload() = default;
    Payload(std::vector<std::byte> bytes);  // owns them (implicit: a vector is a payload)
    // `bytes` lie in memory that `owner` keeps alive (a received libzmq message).
    Payload(std::shared_ptr<const void> owner, std::span<const std::byte> bytes)
        : owner_(std::move(owner)), bytes_(bytes) {}

    std::span<const std::byte> bytes() const { return bytes_; }
    operator std::span<const std::byte>() const { return bytes_; }  // read as the bytes it holds
    const std::byte* data() const { return bytes_.data(); }
    std::size_t size() const { return bytes_.size(); }
    bool empty() const { return bytes_.empty(); }
    // The bytes as a vector of their own: no copy where the Payload owns a vector, a copy where they lie in
    // a received message. The Payload is empty after.
    std::vector<std::byte> take();

  private:
    std::shared_ptr<std::vector<std::byte>> vector_;  // the bytes, where the Payload was made of a vector
    std::shared_ptr<const void> owner_;                // what keeps them alive otherwise
    std::span<const std::byte> bytes_;
};

}  // namespace arch::net
