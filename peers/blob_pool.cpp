// peers/blob_pool.cpp: BlobPool.
#include "peers/blob_pool.h"

#include <utility>

namespace arch {

std::vector<std::byte> BlobPool::take() {
    std::lock_guard<std::mutex> lock(mutex_);
    std::vector<std::byte> out = std::exchange(spare_, {});
    out.clear();
    return out;
}

SharedBlob BlobPool::share(std::vector<std::byte> bytes) {
    auto* owned = new std::vector<std::byte>(std::move(bytes));
    return SharedBlob(owned, [pool = shared_from_this()](const std::vector<std::byte>* b) {
        pool->give_back(const_cast<std::vector<std::byte>*>(b));
    });
}

void BlobPool::give_back(std::vector<std::byte>* bytes) {
    std::unique_ptr<std::vector<std::byte>> owned(bytes);
    keep(std::move(*bytes));
}

void BlobPool::keep(std::vector<std::byte> bytes) {
    {
        std::lock_guard<std::mutex> lock(mutex_);
        if (bytes.capacity() > spare_.capacity()) std::swap(bytes, spare_);
    }
    // the smaller buffer is freed here, outside the lock
}

}  // namespace arch
