// kernels/cuda/launch.h: the launch geometry of the grid-stride kernels: enough blocks of `threads`
// threads for `work` items, at least one, at most 2^16 (the kernels loop over the grid beyond that).
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>

namespace arch::cuda {

inline unsigned grid_stride_blocks(std::uint64_t work, int threads) {
    const std::uint64_t blocks = (work + static_cast<std::uint64_t>(threads) - 1) / static_cast<std::uint64_t>(threads);
    return static_cast<unsigned>(std::clamp<std::uint64_t>(blocks, 1, std::uint64_t{1} << 16));
}

}  // namespace arch::cuda
