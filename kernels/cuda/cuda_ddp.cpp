// kernels/cuda/cuda_ddp.cpp: CudaDdpReducer.
#include "kernels/cuda/cuda_ddp.h"

#include "core/param_store.h"
#include "kernels/cuda/cuda_check.h"

namespace arch::cuda {

CudaDdpReducer::CudaDdpReducer(const ParamLayout& layout, Collective& collective, cudaStream_t stream, float* grads)
    : layout_(layout), collective_(collective), stream_(stream), grads_(grads) {
    written_.resize(num_units(layout));
    for (cudaEvent_t& e : written_) check(cudaEventCreateWithFlags(&e, cudaEventDisableTiming), "cudaEventCreate");
}

CudaDdpReducer::~CudaDdpReducer() {
    try {
        comm_.drain();
    } catch (...) {  // already reported to whoever waited
    }
    for (cudaEvent_t e : written_) cudaEventDestroy(e);
}

void CudaDdpReducer::unit_done(int unit) {
    if (!last_) return;
    cudaEvent_t written = written_.at(unit);
    check(cudaEventRecord(written, stream_), "cudaEventRecord (unit gradients)");
    float* g = grads_ + unit_begin(layout_, unit);
    const std::size_t n = unit_size(layout_, unit);
    ++queued_;
    comm_.push([this, written, g, n] {
        check(cudaEventSynchronize(written), "cudaEventSynchronize (unit gradients)");
        collective_.all_reduce_sum(g, n);
    });
}

void CudaDdpReducer::finish() { comm_.drain(); }

}  // namespace arch::cuda
