// kernels/cuda/nccl_collective.h: the Collective of one island's GPUs, over NCCL. One process, one
// thread per GPU: make_nccl_collectives() creates the communicators of all listed GPUs at once
// (ncclCommInitAll, no network rendezvous), and rank r's object is then driven by the thread of GPU r.
// Buffers are device pointers on that GPU. Each op runs on the collective's own stream and returns
// when it is complete; abort() makes a rank blocked in an op give up (ncclCommAbort) and throw.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "core/collective.h"

namespace arch {

// (How many GPUs there are, and why none: arch::cuda::device_count() and no_device_reason() in
// kernels/cuda/cuda_check.h.)
// One NCCL communicator per entry of devices (CUDA ordinals), ranks in that order.
std::vector<std::unique_ptr<Collective>> make_nccl_collectives(const std::vector<int>& devices);

}  // namespace arch
