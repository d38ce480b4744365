// tests/cuda/emulator/nccl_host.cpp: make_nccl_collectives with the contract of
// kernels/cuda/nccl_collective.h, which the emulated build links instead of nccl_collective.cpp
// (NCCL cannot run here). The emulated "GPUs" share host memory, so the CPU collective, one rank per
// thread as NCCL's, stands in for it; the same stand-in as tests/cuda/island_fixture.h.
#include "kernels/cuda/nccl_collective.h"

#include "core/error.h"
#include "kernels/cpu/cpu_collective.h"

namespace arch {

std::vector<std::unique_ptr<Collective>> make_nccl_collectives(const std::vector<int>& devices) {
    if (devices.empty()) throw Error("make_nccl_collectives: no devices");
    return make_cpu_collectives(static_cast<int>(devices.size()));
}

}  // namespace arch
