// net/message.cpp: header encode/decode, little-endian at fixed offsets (core/bytes.h).
#include "net/message.h"

#include <cstdio>
#include <cstring>

#include "core/bytes.h"

namespace arch::net {
namespace {

std::string hex32(uint32_t v) {
    char text[16];
    std::snprintf(text, sizeof(text), "0x%08x", v);
    return text;
}

}  // namespace

void encode_header(const Header& h, std::byte* out) {
    store_le<uint32_t>(out + 0, kMagic);
    store_le<uint8_t>(out + 4, kVersion);
    store_le<uint8_t>(out + 5, h.flags);
    store_le<uint16_t>(out + 6, h.type);
    store_le<uint64_t>(out + 8, h.round);
    store_le<uint32_t>(out + 16, h.payload_bytes);
    store_le<uint64_t>(out + 20, h.run_id);
    store_le<uint64_t>(out + 28, h.sequence);
}

std::size_t bytes_of(Pieces pieces) {
    std::size_t bytes = 0;
    for (const std::span<const std::byte> piece : pieces) bytes += piece.size();
    return bytes;
}

void append_pieces(std::vector<std::byte>& out, Pieces pieces) {
    out.reserve(out.size() + bytes_of(pieces));
    for (const std::span<const std::byte> piece : pieces) out.insert(out.end(), piece.begin(), piece.end());
}

std::vector<std::byte> encode_message(Header header, std::span<const std::byte> payload) {
    header.payload_bytes = static_cast<uint32_t>(payload.size());
    std::vector<std::byte> frame(kHeaderBytes + payload.size());
    encode_header(header, frame.data());
    if (!payload.empty()) std::memcpy(frame.data() + kHeaderBytes, payload.data(), payload.size());
    return frame;
}

std::optional<Header> decode_header(std::span<const std::byte> frame, std::string& error) {
    if (frame.size() < kHeaderBytes) {
        error = "truncated header: frame holds " + std::to_string(frame.size()) +
                " bytes, a header needs " + std::to_string(kHeaderBytes);
        return std::nullopt;
    }
    const std::byte* p = frame.data();
    const uint32_t magic = load_le<uint32_t>(p);
    if (magic != kMagic) {
        error = "bad magic: expected " + hex32(kMagic) + ", found " + hex32(magic);
        return std::nullopt;
    }
    if (const uint8_t version = load_le<uint8_t>(p + 4); version != kVersion) {
        error = "unsupported message version " + std::to_string(version) +
                " (this build speaks version " + std::to_string(kVersion) + ")";
        return std::nullopt;
    }
    Header h;
    h.flags = load_le<uint8_t>(p + 5);
    h.type = load_le<uint16_t>(p + 6);
    h.round = load_le<uint64_t>(p + 8);
    h.payload_bytes = load_le<uint32_t>(p + 16);
    h.run_id = load_le<uint64_t>(p + 20);
    h.sequence = load_le<uint64_t>(p + 28);
    const std::size_t body = frame.size() - kHeaderBytes;
    if (body != h.payload_bytes) {
        error = "length mismatch: header says " + std::to_string(h.payload_bytes) +
                " payload bytes, frame holds " + std::to_string(body);
        return std::nullopt;
    }
    return h;
}

std::string type_name(uint16_t type) {
    switch (type) {
        case kTransferBegin:
            return "transfer-begin";
        case kTransferStatus:
            return "transfer-status";
        case kTransferChunk:
            return "transfer-chunk";
        case kTransferCredit:
            return "transfer-credit";
        case kTransferDone:
            return "transfer-done";
        case kTransferAbort:
            return "transfer-abort";
        default: {
            char text[16];
            std::snprintf(text, sizeof(text), "type 0x%04x", type);
            return text;
        }
    }
}

}  // namespace arch::net
