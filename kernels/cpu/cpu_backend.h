// kernels/cpu/cpu_backend.h: the CPU implementation of core's Backend (fp32, OpenMP, oneDNN GEMM).
// Memory is ordinary host memory, 64-byte aligned; upload and download are memcpy.
#pragma once

#include <memory>

#include "core/backend.h"

namespace arch {

std::unique_ptr<Backend> make_cpu_backend();

}  // namespace arch
