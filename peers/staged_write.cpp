// peers/staged_write.cpp: StagedWrite.
#include "peers/staged_write.h"

#include <algorithm>

namespace arch {

void StagedWrite::add(std::span<const std::byte> part) {
    if (part.size() <= 4096) {
        owned_.emplace_back(part.begin(), part.end());
        part = owned_.back();  // the vector's buffer stays where it is when owned_ grows
    }
    parts_.push_back(part);
}

bool StagedWrite::advance(std::size_t budget) {
    while (next_ < parts_.size() && budget > 0) {
        const std::span<const std::byte> part = parts_[next_];
        const std::size_t n = std::min(budget, part.size() - within_);
        const std::span<const std::byte> piece = part.subspan(within_, n);
        sum_->add(piece);
        file_->write_at(at_, piece);
        at_ += n;
        budget -= n;
        within_ += n;
        if (within_ == part.size()) {
            ++next_;
            within_ = 0;
        }
    }
    return done();
}

}  // namespace arch
