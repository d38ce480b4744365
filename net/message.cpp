// net/message.cpp: header encode/decode with explicit little-endian byte order (no struct casts).
#include "net/message.h"

#include <cstdio>
#include <cstring>

namespace arch::net {
namespace {

template <typename T>
void put(uint8_t* out, T value) {
    for (std::size_t i = 0; i < sizeof(T); ++i) out[i] = static_cast<uint8_t>(value >> (8 * i));
}

template <typename T>
T get(const uint8_t* in) {
    T value = 0;
    for (std::size_t i = 0; i < sizeof(T); ++i)
        value |= static_cast<T>(static_cast<T>(in[i]) << (8 * i));
    return value;
}

std::string hex32(uint32_t v) {
    char text[16];
    std::snprintf(text, sizeof(text), "0x%08x", v);
    return text;
}

}  // namespace

void encode_header(const Header& h, uint8_t* out) {
    put<uint32_t>(out + 0, kMagic);
    out[4] = kVersion;
    out[5] = h.flags;
    put<uint16_t>(out + 6, h.type);
    put<uint64_t>(out + 8, h.round);
    put<uint32_t>(out + 16, h.payload_bytes);
    put<uint64_t>(out + 20, h.run_id);
    put<uint64_t>(out + 28, h.sequence);
}

std::vector<uint8_t> encode_message(Header header, std::span<const uint8_t> payload) {
    header.payload_bytes = static_cast<uint32_t>(payload.size());
    std::vector<uint8_t> frame(kHeaderBytes + payload.size());
    encode_header(header, frame.data());
    if (!payload.empty()) std::memcpy(frame.data() + kHeaderBytes, payload.data(), payload.size());
    return frame;
}

std::optional<Header> decode_header(std::span<const uint8_t> frame, std::string& error) {
    if (frame.size() < kHeaderBytes) {
        error = "truncated header: frame holds " + std::to_string(frame.size()) +
                " bytes, a header needs " + std::to_string(kHeaderBytes);
        return std::nullopt;
    }
    const uint8_t* p = frame.data();
    const uint32_t magic = get<uint32_t>(p);
    if (magic != kMagic) {
        error = "bad magic: expected " + hex32(kMagic) + ", found " + hex32(magic);
        return std::nullopt;
    }
    if (p[4] != kVersion) {
        error = "unsupported message version " + std::to_string(p[4]) +
                " (this build speaks version " + std::to_string(kVersion) + ")";
        return std::nullopt;
    }
    Header h;
    h.flags = p[5];
    h.type = get<uint16_t>(p + 6);
    h.round = get<uint64_t>(p + 8);
    h.payload_bytes = get<uint32_t>(p + 16);
    h.run_id = get<uint64_t>(p + 20);
    h.sequence = get<uint64_t>(p + 28);
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
