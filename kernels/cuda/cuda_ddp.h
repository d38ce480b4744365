// kernels/cuda/cuda_ddp.h: DDP on GPUs with the all-reduce overlapped with backward, as the CPU DDP
// does (core/ddp.h): on the last micro-batch of a step, as soon as backward leaves a unit (a block,
// or the globals last), the all-reduce of that unit's fp32 gradients is queued on a communication
// thread, which starts it once the compute stream has written them (an event), while backward goes
// on with the unit below. Internal to kernels/cuda (CudaTransformer owns one when options.ddp is set).
#pragma once

#include <cuda_runtime_api.h>

#include <vector>

#include "core/collective.h"
#include "core/comm_thread.h"
#include "core/param_layout.h"

namespace arch::cuda {

class CudaDdpReducer {
  public:
    // grads: the model's whole fp32 gradient buffer (ParamLayout order) on the device of `stream`.
    CudaDdpReducer(const ParamLayout& layout, Collective& collective, cudaStream_t stream, float* grads);
    ~CudaDdpReducer();
    CudaDdpReducer(const CudaDdpReducer&) = delete;
    CudaDdpReducer& operator=(const CudaDdpReducer&) = delete;

    // Whether this backward pass is the step's last (then leaving a unit starts its all-reduce).
    void set_last_micro_batch(bool last) { last_ = last; }
    bool last_micro_batch() const { return last_; }
    void unit_done(int unit);  // backward has queued every write to the unit's gradients
    void finish();             // every queued all-reduce done; rethrows a failed one
    int reduces_queued() const { return queued_; }  // since construction

  private:
    const ParamLayout& layout_;
    Collective& collective_;
    cudaStream_t stream_;
    float* grads_;
    std::vector<cudaEvent_t> written_;  // per unit
    bool last_ = true;
    int queued_ = 0;
    CommThread comm_;  // destroyed first
};

}  // namespace arch::cuda
