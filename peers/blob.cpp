// peers/blob.cpp: Blob.
#include "peers/blob.h"

#include <utility>

namespace arch {

Blob::Blob(std::vector<std::byte> bytes) : own_(std::move(bytes)), pieces_{std::span<const std::byte>(own_)}, size_(own_.size()) {}

Blob::Blob(std::vector<std::span<const std::byte>> pieces, std::shared_ptr<const void> keeps)
    : keeps_(std::move(keeps)), pieces_(std::move(pieces)) {
    for (const std::span<const std::byte> piece : pieces_) size_ += piece.size();
}

std::vector<std::byte> Blob::joined() const {
    std::vector<std::byte> out;
    out.reserve(size_);
    for (const std::span<const std::byte> piece : pieces_) out.insert(out.end(), piece.begin(), piece.end());
    return out;
}

}  // namespace arch
