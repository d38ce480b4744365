// net/message.h: the fixed 36-byte header that starts every message on the wire, and its codec.
// It does not know what a message means: types below 0x0100 are reserved for net/ (transfers),
// everything else belongs to the run protocol (peers/). All integers are little-endian.
// decode_header never throws and never reads past the frame: a bad frame yields a reason string.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace arch::net {

inline constexpr uint32_t kMagic = 0x48435241;  // "ARCH" as bytes on the wire
// Version 2 carries the round as a u64, as the run counts rounds (version 1 had a u32 there).
inline constexpr uint8_t kVersion = 2;
inline constexpr std::size_t kHeaderBytes = 36;

// Message types owned by net/ (transfer.h). The run protocol uses types >= kFirstProtocolType.
enum MessageType : uint16_t {
    kTransferBegin =
        0x0010,  // sender -> receiver: announce (or re-announce after reconnect) a blob
    kTransferStatus = 0x0011,  // receiver -> sender: chunks held + initial credit for this session
    kTransferChunk = 0x0012,   // sender -> receiver: one chunk with its XXH3-128 checksum
    kTransferCredit = 0x0013,  // receiver -> sender: more credit (and optionally "resend chunk i")
    kTransferDone = 0x0014,    // receiver -> sender: whole blob received and verified
    kTransferAbort = 0x0015,   // either way: give up this transfer, with a reason
    kFirstProtocolType = 0x0100,
};

// Layout (byte offsets): 0 magic u32 | 4 version u8 | 5 flags u8 | 6 type u16 | 8 round u64 |
// 16 payload_bytes u32 | 20 run_id u64 | 28 sequence u64.
struct Header {
    uint16_t type = 0;
    uint8_t flags = 0;  // meaning defined by the type's owner; net/ leaves it alone
    uint64_t round = 0;
    uint32_t payload_bytes = 0;  // bytes that follow the header in the same frame
    uint64_t run_id = 0;
    uint64_t sequence = 0;  // per-sender counter, set by the caller (or the socket if 0)
};

// A payload (or a blob) in pieces that lie apart in memory, taken one after another as if joined.
using Pieces = std::span<const std::span<const std::byte>>;
std::size_t bytes_of(Pieces pieces);                          // their bytes together
void append_pieces(std::vector<std::byte>& out, Pieces pieces);  // each at out's end in turn

// Writes the kHeaderBytes header bytes (magic and version included) into out.
void encode_header(const Header& header, std::byte* out);

// One frame = header + payload. payload_bytes in the header is set from payload.size().
std::vector<std::byte> encode_message(Header header, std::span<const std::byte> payload);

// Checks magic, version, and that the frame holds exactly 36 + payload_bytes bytes.
// Returns the header, or nullopt with `error` saying what was wrong.
std::optional<Header> decode_header(std::span<const std::byte> frame, std::string& error);

// A short readable name for a type ("transfer-chunk", or "type 0x0123" for the protocol's).
std::string type_name(uint16_t type);

}  // namespace arch::net
