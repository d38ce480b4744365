// outer_optimizer/state_bytes.h: internal: the byte layout of saved optimizer state.
// Layout (little-endian): "AOST", u32 version (1), u32 kind, u32 arrays, u64 n, u64 steps, then
// `arrays` x n f32. unpack_state validates every field and finiteness before returning anything.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <span>
#include <string_view>
#include <vector>

namespace arch::outer::detail {

enum class StateKind : std::uint32_t { nesterov = 1, delayed_nesterov = 2 };

// Bytes of a saved state of `arrays` buffers of n floats each.
std::size_t state_size(std::size_t arrays, std::size_t n);
// Hands the state to put in order: its header, then each array's bytes where they lie.
void write_state(StateKind kind, std::uint64_t steps, std::span<const std::span<const float>> arrays,
                 const std::function<void(std::span<const std::byte>)>& put);

// Returns the arrays (each n floats) and the step count; throws arch::Error naming `who`.
std::vector<std::vector<float>> unpack_state(std::span<const std::byte> bytes, StateKind kind,
                                             std::size_t n, std::size_t arrays,
                                             std::uint64_t& steps, std::string_view who);

}  // namespace arch::outer::detail
