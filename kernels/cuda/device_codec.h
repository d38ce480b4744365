// kernels/cuda/device_codec.h: the int8, int4 and fp4 pseudo-gradient codecs on the GPU, so that
// only the packed payload leaves the device. Bytes are exactly those of compression/ (same header,
// payload and zstd frame): encode_on_device(spec, x) == compression::make_codec(spec)->encode(x) on
// the CPU, and decode_on_device validates as compression::decode does before it writes anything.
// Quantization runs on the GPU; the wire header, the zstd stage and validation run on the host.
// Plain C++ (no nvcc needed to include it).
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

#include "kernels/cuda/codec_math.h"

// The API is C++20 (std::span); device_codec.cu (nvcc, C++17) sees only the launchers.
#if __cplusplus >= 202002L
#include <span>

namespace arch::cuda {

// Whether encode_on_device handles this spec: int8, int4, fp4 with optional :block=N and
// +zstd[:level]; not +ef, not the other codecs. A malformed spec gives false.
bool device_codec_supports(std::string_view spec);

// Quantizes n floats at device pointer x on the GPU (enqueued on `stream`, which x's producers
// should use too) and returns the bytes compression::make_codec(spec)->encode() gives for them on
// the CPU. Throws arch::Error for an unsupported spec and for a NaN/inf in x (the CPU codec's
// wording), without side effects. Returns once the payload is on the host.
std::vector<std::byte> encode_on_device(std::string_view spec, const float* x, std::size_t n,
                                        cudaStream_t stream);

// ---- per shard (ZeRO-3): each rank quantizes the codec blocks that start in its pieces ----------
// A run of whole codec blocks of the full vector, [first_block, first_block + blocks).
struct BlockRun {
    std::uint64_t first_block = 0, blocks = 0;
};
// What one rank encoded: its runs in increasing order, and their payload as quantize writes it for
// the runs' values back to back: every block's 4-byte scale, then every block's codes.
struct ShardPayload {
    std::vector<BlockRun> runs;
    std::vector<std::byte> payload;
    std::uint64_t first_bad = ~0ull;  // flat index of the first non-finite value, if any
    float bad_value = 0.0f;
};
// The block size of a device spec (throws as encode_on_device does for one it does not handle).
std::uint32_t device_codec_block(std::string_view spec);
// Quantizes x (device, n floats: whole blocks of the full vector, the runs back to back) into
// part.payload, and sets part.first_bad to the flat index of its first non-finite value (via the runs).
void quantize_shard(std::string_view spec, const float* x, std::size_t n, ShardPayload& part,
                    cudaStream_t stream);
// The wire bytes compression::make_codec(spec)->encode(Δ) gives for the full vector of n floats, from
// the ranks' parts, which must cover every block once. Throws the CPU codec's message for a
// non-finite value, and arch::Error when the parts do not tile the vector.
std::vector<std::byte> join_shard_payloads(std::string_view spec, std::size_t n,
                                           const std::vector<ShardPayload>& parts);

// Validates bytes on the host exactly as compression::decode does (header, sizes, zstd frames,
// scales, padding), then dequantizes on the GPU into out (n floats, device) on `stream`. Throws
// arch::Error on any problem (also for codecs other than int8, int4, fp4) and then leaves out
// untouched. Returns once out is written.
void decode_on_device(std::span<const std::byte> bytes, float* out, std::size_t n,
                      cudaStream_t stream);

}  // namespace arch::cuda
#endif

namespace arch::cuda {

// ---- launchers (device_codec.cu), for device_codec.cpp: enqueue on stream, never synchronise -
namespace device_codec_detail {

// payload (device, codec_math::payload_bytes(q, n, block) bytes, 4-byte aligned) = the codec
// payload of x; *first_bad (device) = the smallest index of a non-finite x, or ~0ull if none.
void launch_quantize(codec_math::Quant q, const float* x, std::uint64_t n, std::uint32_t block,
                     std::byte* payload, unsigned long long* first_bad, cudaStream_t stream);

// out (device, n floats) = the values of a validated payload (device, 4-byte aligned).
void launch_dequantize(codec_math::Quant q, const std::byte* payload, std::uint64_t n,
                       std::uint32_t block, float* out, cudaStream_t stream);

}  // namespace device_codec_detail
}  // namespace arch::cuda
