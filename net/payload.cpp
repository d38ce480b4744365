// net/payload.cpp: a Payload made of a vector gives it back on take() without a copy.
#include "net/payload.h"

#include <utility>

namespace arch::net {

Payload::Payload(std::vector<std::byte> bytes)
    : vector_(std::make_shared<std::vector<std::byte>>(std::move(bytes))), bytes_(*vector_) {}

std::vector<std::byte> Payload::take() {
    std::vector<std::byte> out;
    if (vector_ && vector_.use_count() == 1)  // this Payload alone has it (not a copy of it)
        out = std::move(*vector_);
    else
        out.assign(bytes_.begin(), bytes_.end());
    vector_.reset();
    owner_.reset();
    bytes_ = {};
    return out;
}

}  // namespace arch::net
