// net/transfer_wire.cpp: byte layouts of the transfer messages; every read is bounds-checked first.
#include "net/transfer_wire.h"

#include <algorithm>
#include <cstring>
#include <new>

#include "core/bytes.h"

namespace arch::net {
namespace {

// The payloads are checked for length first (need), so a ByteReader below never runs short.
ByteReader reader(std::span<const std::byte> p) { return ByteReader(p, "transfer message"); }

Digest digest(ByteReader& r) {
    Digest d;
    const std::span<const std::byte> b = r.raw(d.size());
    std::copy(b.begin(), b.end(), d.begin());
    return d;
}

bool need(std::span<const std::byte> p, std::size_t bytes, bool exact, const char* what,
          std::string& error) {
    if (exact ? p.size() == bytes : p.size() >= bytes) return true;
    error = std::string(what) + ": payload holds " + std::to_string(p.size()) +
            " bytes, expected " + (exact ? "" : "at least ") + std::to_string(bytes);
    return false;
}

}  // namespace

Digest checksum(std::span<const std::byte> bytes) { return xxh3_digest(bytes); }

Digest checksum(Pieces pieces) {
    DigestStream stream;
    for (const std::span<const std::byte> piece : pieces) stream.add(piece);
    return stream.digest();
}

std::vector<std::byte> encode(const BeginMsg& m) {
    ByteWriter w;
    w.reserve(44);
    w.u64(m.id);
    w.u64(m.total_bytes);
    w.u32(m.chunk_bytes);
    w.u32(m.chunk_count);
    w.u32(m.tag);
    w.raw(m.digest);
    return w.take();
}

std::vector<std::byte> encode(const StatusMsg& m) {
    ByteWriter w;
    w.reserve(20 + m.held.size() / 8 + 1);
    w.u64(m.id);
    w.u32(m.session);
    w.u32(m.credit);
    w.u32(static_cast<uint32_t>(m.held.size()));
    const std::span<std::byte> bitmap = w.raw_in_place((m.held.size() + 7) / 8);
    std::fill(bitmap.begin(), bitmap.end(), std::byte{0});
    for (std::size_t i = 0; i < m.held.size(); ++i)
        if (m.held[i]) bitmap[i / 8] |= std::byte{1} << (i % 8);
    return w.take();
}

std::vector<std::byte> encode_chunk(uint64_t id, uint32_t session, uint32_t index,
                                  std::span<const std::byte> data) {
    return encode_chunk(id, session, index, Pieces(&data, 1));
}

std::vector<std::byte> encode_chunk_prefix(uint64_t id, uint32_t session, uint32_t index, Pieces data) {
    ByteWriter w;
    w.reserve(kChunkPrefixBytes);
    w.u64(id);
    w.u32(session);
    w.u32(index);
    w.raw(checksum(data));
    return w.take();
}

std::vector<std::byte> encode_chunk(uint64_t id, uint32_t session, uint32_t index, Pieces data) {
    std::vector<std::byte> out = encode_chunk_prefix(id, session, index, data);
    append_pieces(out, data);
    return out;
}

std::vector<std::byte> encode(const CreditMsg& m) {
    ByteWriter w;
    w.reserve(20);
    w.u64(m.id);
    w.u32(m.session);
    w.u32(m.grant);
    w.u32(m.resend);
    return w.take();
}

std::vector<std::byte> encode_done(uint64_t id) {
    ByteWriter w;
    w.reserve(8);
    w.u64(id);
    return w.take();
}

std::vector<std::byte> encode(const AbortMsg& m) {
    ByteWriter w;
    w.reserve(8 + 256);
    w.u64(m.id);
    const std::string reason = m.reason.substr(0, 256);
    w.raw(byte_view(reason));
    return w.take();
}

std::optional<BeginMsg> decode_begin(std::span<const std::byte> p, std::string& error) {
    if (!need(p, 44, true, "transfer-begin", error)) return std::nullopt;
    ByteReader r = reader(p);
    BeginMsg m;
    m.id = r.u64();
    m.total_bytes = r.u64();
    m.chunk_bytes = r.u32();
    m.chunk_count = r.u32();
    m.tag = r.u32();
    m.digest = digest(r);
    return m;
}

std::optional<StatusMsg> decode_status(std::span<const std::byte> p, std::string& error, uint32_t max_chunks) {
    if (!need(p, 20, false, "transfer-status", error)) return std::nullopt;
    ByteReader r = reader(p);
    StatusMsg m;
    m.id = r.u64();
    m.session = r.u32();
    m.credit = r.u32();
    const uint32_t count = r.u32();
    if (count > max_chunks) {
        error = "transfer-status lists " + std::to_string(count) + " chunks, the transfer has " + std::to_string(max_chunks);
        return std::nullopt;
    }
    if (!need(p, 20 + (static_cast<std::size_t>(count) + 7) / 8, true, "transfer-status bitmap",
              error))
        return std::nullopt;
    const auto bitmap = r.rest();
    m.held.resize(count);
    for (uint32_t i = 0; i < count; ++i) m.held[i] = ((bitmap[i / 8] >> (i % 8)) & std::byte{1}) != std::byte{0};
    return m;
}

std::optional<ChunkView> decode_chunk(std::span<const std::byte> p, std::string& error) {
    if (!need(p, kChunkPrefixBytes, false, "transfer-chunk", error)) return std::nullopt;
    ByteReader r = reader(p);
    ChunkView c;
    c.id = r.u64();
    c.session = r.u32();
    c.index = r.u32();
    c.checksum = digest(r);
    c.data = r.rest();
    return c;
}

std::optional<CreditMsg> decode_credit(std::span<const std::byte> p, std::string& error) {
    if (!need(p, 20, true, "transfer-credit", error)) return std::nullopt;
    ByteReader r = reader(p);
    CreditMsg m;
    m.id = r.u64();
    m.session = r.u32();
    m.grant = r.u32();
    m.resend = r.u32();
    return m;
}

std::optional<uint64_t> decode_done(std::span<const std::byte> p, std::string& error) {
    if (!need(p, 8, true, "transfer-done", error)) return std::nullopt;
    return reader(p).u64();
}

std::optional<AbortMsg> decode_abort(std::span<const std::byte> p, std::string& error) {
    if (!need(p, 8, false, "transfer-abort", error)) return std::nullopt;
    if (p.size() > 8 + 256) {
        error = "transfer-abort: reason longer than 256 bytes";
        return std::nullopt;
    }
    ByteReader r = reader(p);
    AbortMsg m;
    m.id = r.u64();
    const auto rest = r.rest();
    m.reason.assign(reinterpret_cast<const char*>(rest.data()), rest.size());
    return m;
}

std::optional<uint64_t> peek_transfer_id(std::span<const std::byte> payload) {
    if (payload.size() < 8) return std::nullopt;
    return reader(payload).u64();
}

}  // namespace arch::net
