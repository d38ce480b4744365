// peers/diloco/gpu_backend.cpp: the slot a GPU backend installs itself into (gpu_backend.h).
#include "peers/diloco/gpu_backend.h"

namespace arch::diloco {

namespace {
const GpuBackend*& slot() {
    static const GpuBackend* backend = nullptr;  // a function's static: set from other files' static initializers
    return backend;
}
}  // namespace

const GpuBackend* gpu_backend() { return slot(); }
void install_gpu_backend(const GpuBackend& backend) { slot() = &backend; }

}  // namespace arch::diloco
