// peers/blob.cpp: Blob.
#include "peers/blob.h"

#include <utility>

#include "net/message.h"

namespace arch {

Blob::Blob(std::vector<std::byte> bytes, std::function<void(std::vector<std::byte>&&)> release)
    : own_(std::move(bytes)), release_(std::move(release)), pieces_{std::span<const std::byte>(own_)}, size_(own_.size()) {}

Blob::~Blob() {
    if (!release_ || own_.capacity() == 0) return;
    try {
        release_(std::move(own_));
    } catch (...) {  // the memory is freed instead
    }
}

Blob::Blob(std::vector<std::span<const std::byte>> pieces, std::shared_ptr<const void> keeps)
    : keeps_(std::move(keeps)), pieces_(std::move(pieces)), size_(net::bytes_of(pieces_)) {}

std::vector<std::byte> Blob::joined() const {
    std::vector<std::byte> out;
    net::append_pieces(out, pieces_);
    return out;
}

}  // namespace arch
