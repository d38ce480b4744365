// core/ddp.cpp: DdpStore: whole buffers and per-unit gradient all-reduce on the communication thread.
#include "core/ddp.h"

namespace arch {

DdpStore::DdpStore(const ParamLayout& layout, Backend& backend, Collective& collective)
    : layout_(layout), backend_(backend), collective_(collective) {
    params_ = static_cast<float*>(backend_.alloc(layout.num_params() * sizeof(float)));
    grads_ = static_cast<float*>(backend_.alloc(layout.num_params() * sizeof(float)));
}

DdpStore::~DdpStore() {
    try {
        comm_.drain();
    } catch (...) {  // a failed collective was already reported to whoever waited for it
    }
    backend_.free(params_);
    backend_.free(grads_);
}

void DdpStore::grads_done(int unit) {
    if (!sync_) return;
    float* bucket = grads_ + unit_begin(layout_, unit);
    const std::size_t n = unit_size(layout_, unit);
    comm_.push([this, bucket, n] { collective_.all_reduce_sum(bucket, n); });
}

DeviceMemory DdpStore::memory() const {
    DeviceMemory m;
    m.params_bytes = layout_.num_params() * sizeof(float);
    m.grads_bytes = m.params_bytes;
    return m;
}

}  // namespace arch
