// peers/blob_pool.h: one spare buffer for a blob made again and again at the same size (the host's
// state of θ, P, made for joiners). A blob shared through the pool gives its buffer back when its
// last holder lets go of it (a send queue: any thread), and the next blob is built in that buffer
// instead of in fresh memory the kernel must clear page by page. The host also borrows the spare for
// a round's aggregate and keeps it back (keep) before the next state is built in it. At most one
// spare is kept; a second is freed.
#pragma once

#include <cstddef>
#include <memory>
#include <mutex>
#include <vector>

#include "peers/link.h"

namespace arch {

class BlobPool : public std::enable_shared_from_this<BlobPool> {
public:
    static std::shared_ptr<BlobPool> make() { return std::shared_ptr<BlobPool>(new BlobPool()); }

    // The spare buffer, emptied but with its capacity; an empty vector when there is none.
    std::vector<std::byte> take();
    // `bytes` as a SharedBlob whose buffer comes back here once nobody holds it (the pool lives as
    // long as any blob it shared).
    SharedBlob share(std::vector<std::byte> bytes);
    // A buffer lent out by take() and not shared after all, back for the next take (the larger of it
    // and the spare is kept).
    void keep(std::vector<std::byte> bytes);

private:
    BlobPool() = default;
    void give_back(std::vector<std::byte>* bytes);

    std::mutex mutex_;
    std::vector<std::byte> spare_;
};

}  // namespace arch
