// net/transfer_wire.h: the payloads of the six transfer message types (message.h) and their codecs.
// Written with core/bytes.h. Decoders check lengths and ranges only; what a value means for a transfer in progress is
// decided by TransferSender/TransferReceiver (transfer.h). Little-endian, fixed layouts:
//   begin:  id u64 | total_bytes u64 | chunk_bytes u32 | chunk_count u32 | tag u32 | checksum of blob
//   status: id u64 | session u32 | credit u32 | chunk_count u32 | bitmap (ceil(count/8) bytes, LSB first)
//   chunk:  id u64 | session u32 | index u32 | checksum of data | data
//   credit: id u64 | session u32 | grant u32 | resend u32 (kNoResend: none)
//   done:   id u64
//   abort:  id u64 | reason (UTF-8, at most 256 bytes)
// A checksum is XXH3-128 (canonical, big-endian bytes): it finds a blob put together wrongly, at
// memory speed. It is no defence against the sender, who computes it: CURVE already authenticates
// every frame on the way, and what a blob means is checked by whoever takes it (docs/net.md).
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "core/digest.h"
#include "net/message.h"

namespace arch::net {

using arch::Digest;  // XXH3-128 (core/digest.h)
Digest checksum(std::span<const std::byte> bytes);
Digest checksum(Pieces pieces);  // the same digest as of the pieces joined
using arch::DigestStream;  // a piece at a time: the same as checksum() of them joined

inline constexpr uint32_t kNoResend = 0xffffffffu;
inline constexpr std::size_t kChunkPrefixBytes = 8 + 4 + 4 + 16;

struct BeginMsg {
    uint64_t id = 0;
    uint64_t total_bytes = 0;
    uint32_t chunk_bytes = 0;
    uint32_t chunk_count = 0;
    uint32_t tag = 0;  // what the blob is, in the run protocol's words (net/ does not interpret it)
    Digest digest{};
};
struct StatusMsg {
    uint64_t id = 0;
    uint32_t session = 0;
    uint32_t credit = 0;
    std::vector<bool> held;  // one flag per chunk
};
struct ChunkView {  // points into the decoded payload
    uint64_t id = 0;
    uint32_t session = 0;
    uint32_t index = 0;
    Digest checksum{};
    std::span<const std::byte> data;
};
struct CreditMsg {
    uint64_t id = 0;
    uint32_t session = 0;
    uint32_t grant = 0;
    uint32_t resend = kNoResend;
};
struct AbortMsg {
    uint64_t id = 0;
    std::string reason;
};

std::vector<std::byte> encode(const BeginMsg& m);
std::vector<std::byte> encode(const StatusMsg& m);
std::vector<std::byte> encode_chunk(uint64_t id, uint32_t session, uint32_t index,
                                  std::span<const std::byte> data);
std::vector<std::byte> encode_chunk(uint64_t id, uint32_t session, uint32_t index, Pieces data);  // as if joined
// A chunk's first kChunkPrefixBytes (its checksum taken over `data`): the data itself follows, sent from
// where it lies.
std::vector<std::byte> encode_chunk_prefix(uint64_t id, uint32_t session, uint32_t index, Pieces data);
std::vector<std::byte> encode(const CreditMsg& m);
std::vector<std::byte> encode_done(uint64_t id);
std::vector<std::byte> encode(const AbortMsg& m);

// Each returns nullopt and sets `error` when the payload has the wrong length or shape.
std::optional<BeginMsg> decode_begin(std::span<const std::byte> p, std::string& error);
// `max_chunks`: a bitmap longer than the transfer it answers is refused before it is decoded.
std::optional<StatusMsg> decode_status(std::span<const std::byte> p, std::string& error,
                                       uint32_t max_chunks = UINT32_MAX);
std::optional<ChunkView> decode_chunk(std::span<const std::byte> p, std::string& error);
std::optional<CreditMsg> decode_credit(std::span<const std::byte> p, std::string& error);
std::optional<uint64_t> decode_done(std::span<const std::byte> p, std::string& error);
std::optional<AbortMsg> decode_abort(std::span<const std::byte> p, std::string& error);

// The transfer id of any transfer payload (its first 8 bytes), for routing to the right state
// machine.
std::optional<uint64_t> peek_transfer_id(std::span<const std::byte> payload);

}  // namespace arch::net
