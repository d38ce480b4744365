// kernels/cuda/device_codec.cu: the kernels of the device codecs (int8, int4, fp4) and their
// launchers. Encode: absmax per block (warps over segments of a block, atomicMax on |x| bits: exact
// in any order) -> scale per block -> one code byte per thread. Decode: one code byte per thread.
// All arithmetic is codec_math.h's, so the bits are compression/blockwise.cpp's.
// The launchers never synchronise.
#include <algorithm>

#include "kernels/cuda/codec_math.h"
#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/launch.h"
#include "kernels/cuda/device_codec.h"

namespace arch::cuda::device_codec_detail {
namespace {

namespace cm = codec_math;
using cm::Quant;

constexpr int kThreads = 256;
constexpr std::uint64_t kSegment = 1024;  // elements one warp reduces before its atomicMax


// absmax_bits[b] = max |x| bits over codec block b (starts at 0); *first_bad = min index of an
// inf/NaN. Block b is cut into segs_per_block segments of <= kSegment elements, one warp each.
__global__ void absmax_kernel(const float* __restrict__ x, std::uint64_t n, std::uint64_t block,
                              std::uint64_t segs_per_block, std::uint64_t segments,
                              unsigned* __restrict__ absmax_bits,
                              unsigned long long* __restrict__ first_bad) {
    const unsigned lane = threadIdx.x & 31u;
    const std::uint64_t warps = (static_cast<std::uint64_t>(gridDim.x) * blockDim.x) / 32;
    const std::uint64_t warp =
        (static_cast<std::uint64_t>(blockIdx.x) * blockDim.x + threadIdx.x) / 32;
    for (std::uint64_t seg = warp; seg < segments; seg += warps) {  // uniform across the warp
        const std::uint64_t b = seg / segs_per_block;
        const std::uint64_t begin = b * block + (seg % segs_per_block) * kSegment;
        std::uint64_t end = begin + kSegment;
        if (end > (b + 1) * block) end = (b + 1) * block;
        if (end > n) end = n;
        unsigned m = 0;
        for (std::uint64_t i = begin + lane; i < end; i += 32) {
            const unsigned a = cm::abs_bits(x[i]);
            if (a >= cm::kInfBits) atomicMin(first_bad, static_cast<unsigned long long>(i));
            m = a > m ? a : m;
        }
        for (int off = 16; off > 0; off >>= 1) {
            const unsigned o = __shfl_xor_sync(0xffffffffu, m, off);
            m = o > m ? o : m;
        }
        if (lane == 0 && m != 0) atomicMax(absmax_bits + b, m);
    }
}

// In place: the absmax bits of each block -> the bits of its scale.
template <Quant Q>
__global__ void scale_kernel(unsigned* __restrict__ scales, std::uint64_t nb) {
    const std::uint64_t stride = static_cast<std::uint64_t>(gridDim.x) * blockDim.x;
    for (std::uint64_t b = static_cast<std::uint64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
         b < nb; b += stride) {
        scales[b] = float_bits(cm::scale_of(Q, bits_float(scales[b])));
    }
}

// codes[j] = code byte j of x.
template <Quant Q>
__global__ void quantize_kernel(const float* __restrict__ x, std::uint64_t n, std::uint64_t block,
                                const float* __restrict__ scales,
                                std::uint8_t* __restrict__ codes) {
    const std::uint64_t bytes = cm::code_bytes(Q, n);
    const std::uint64_t stride = static_cast<std::uint64_t>(gridDim.x) * blockDim.x;
    for (std::uint64_t j = static_cast<std::uint64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
         j < bytes; j += stride) {
        codes[j] = cm::code_byte(Q, x, n, j, scales[cm::block_of_byte(Q, j, block)]);
    }
}

// out = the values of code bytes `codes` with per-block scales.
template <Quant Q>
__global__ void dequantize_kernel(const float* __restrict__ scales,
                                  const std::uint8_t* __restrict__ codes, std::uint64_t n,
                                  std::uint64_t block, float* __restrict__ out) {
    const std::uint64_t bytes = cm::code_bytes(Q, n);
    const std::uint64_t stride = static_cast<std::uint64_t>(gridDim.x) * blockDim.x;
    for (std::uint64_t j = static_cast<std::uint64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
         j < bytes; j += stride) {
        cm::decode_byte(Q, codes[j], scales[cm::block_of_byte(Q, j, block)], j, n, out);
    }
}

template <Quant Q>
void quantize_as(const float* x, std::uint64_t n, std::uint64_t block, std::byte* payload,
                 unsigned long long* first_bad, cudaStream_t stream) {
    const std::uint64_t nb = cm::blocks_of(n, block);
    auto* scales = reinterpret_cast<unsigned*>(payload);
    auto* codes = reinterpret_cast<std::uint8_t*>(payload + 4 * nb);
    check(cudaMemsetAsync(scales, 0, 4 * nb, stream), "cudaMemsetAsync (codec absmax)");
    check(cudaMemsetAsync(first_bad, 0xff, sizeof *first_bad, stream),
          "cudaMemsetAsync (codec flag)");
    const std::uint64_t segs_per_block = (block + kSegment - 1) / kSegment;
    const std::uint64_t segments = nb * segs_per_block;
    absmax_kernel<<<grid_stride_blocks(segments * 32, kThreads), kThreads, 0, stream>>>(x, n, block, segs_per_block,
                                                                    segments, scales, first_bad);
    check_launch("codec absmax_kernel");
    scale_kernel<Q><<<grid_stride_blocks(nb, kThreads), kThreads, 0, stream>>>(scales, nb);
    check_launch("codec scale_kernel");
    quantize_kernel<Q><<<grid_stride_blocks(cm::code_bytes(Q, n), kThreads), kThreads, 0, stream>>>(
        x, n, block, reinterpret_cast<const float*>(scales), codes);
    check_launch("codec quantize_kernel");
}

template <Quant Q>
void dequantize_as(const std::byte* payload, std::uint64_t n, std::uint64_t block, float* out,
                   cudaStream_t stream) {
    const std::uint64_t nb = cm::blocks_of(n, block);
    dequantize_kernel<Q><<<grid_stride_blocks(cm::code_bytes(Q, n), kThreads), kThreads, 0, stream>>>(
        reinterpret_cast<const float*>(payload),
        reinterpret_cast<const std::uint8_t*>(payload + 4 * nb), n, block, out);
    check_launch("codec dequantize_kernel");
}

}  // namespace

void launch_quantize(Quant q, const float* x, std::uint64_t n, std::uint32_t block,
                     std::byte* payload, unsigned long long* first_bad, cudaStream_t stream) {
    if (n == 0) return;
    switch (q) {
        case Quant::int8:
            return quantize_as<Quant::int8>(x, n, block, payload, first_bad, stream);
        case Quant::int4:
            return quantize_as<Quant::int4>(x, n, block, payload, first_bad, stream);
        case Quant::fp4:
            return quantize_as<Quant::fp4>(x, n, block, payload, first_bad, stream);
    }
}

void launch_dequantize(Quant q, const std::byte* payload, std::uint64_t n, std::uint32_t block,
                       float* out, cudaStream_t stream) {
    if (n == 0) return;
    switch (q) {
        case Quant::int8:
            return dequantize_as<Quant::int8>(payload, n, block, out, stream);
        case Quant::int4:
            return dequantize_as<Quant::int4>(payload, n, block, out, stream);
        case Quant::fp4:
            return dequantize_as<Quant::fp4>(payload, n, block, out, stream);
    }
}

}  // namespace arch::cuda::device_codec_detail
