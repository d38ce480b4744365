// peers/staged_write.h: bytes that must reach a file before their owner changes them, written a
// bounded amount at a time so the thread that owns them stays responsive. The host stages the outer
// optimizer's state into its checkpoint this way: the momentum is written where it lies (no copy of
// it), 4 MiB per turn of the event loop, and the next outer step finishes whatever is left before it
// moves the momentum (peers/host_checkpoints.cpp). The parts are hashed as they are written, in order.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <span>
#include <vector>

#include "core/file_io.h"
#include "peers/diloco/global_model.h"

namespace arch {

class StagedWrite {
public:
    // `file` must outlive this object. Parts are added in order (add); each is written at the offset
    // after the last, from `offset` on. A part of a few KiB or less is copied (a caller's header may
    // live on its stack); a larger one is a view, which must not change until done().
    StagedWrite(AtomicFile& file, uint64_t offset, diloco::Checksum& sum) : file_(&file), at_(offset), sum_(&sum) {}
    void add(std::span<const std::byte> part);

    // Writes (and hashes) up to `budget` bytes; true once every part is written. Throws arch::Error
    // for a write the disk refused.
    bool advance(std::size_t budget);
    bool done() const { return next_ == parts_.size(); }
    uint64_t end() const { return at_; }  // the offset after the bytes written so far

private:
    AtomicFile* file_;
    uint64_t at_;
    diloco::Checksum* sum_;
    std::vector<std::span<const std::byte>> parts_;
    std::vector<std::vector<std::byte>> owned_;  // the small parts' copies
    std::size_t next_ = 0, within_ = 0;           // the part being written, and how far
};

}  // namespace arch
