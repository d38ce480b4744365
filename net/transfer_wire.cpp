// net/transfer_wire.cpp: byte layouts of the transfer messages; every read is bounds-checked first.
#include "net/transfer_wire.h"

#include <xxhash.h>

#include <cstring>

namespace arch::net {
namespace {

class Writer {
  public:
    explicit Writer(std::size_t reserve) { bytes.reserve(reserve); }
    template <typename T>
    void put(T value) {
        for (std::size_t i = 0; i < sizeof(T); ++i)
            bytes.push_back(static_cast<uint8_t>(value >> (8 * i)));
    }
    void put_bytes(std::span<const uint8_t> b) { bytes.insert(bytes.end(), b.begin(), b.end()); }
    std::vector<uint8_t> bytes;
};

class Reader {
  public:
    explicit Reader(std::span<const uint8_t> p) : p_(p) {}
    template <typename T>
    T get() {  // callers check size() first
        T value = 0;
        for (std::size_t i = 0; i < sizeof(T); ++i)
            value |= static_cast<T>(static_cast<T>(p_[pos_ + i]) << (8 * i));
        pos_ += sizeof(T);
        return value;
    }
    Digest digest() {
        Digest d;
        std::memcpy(d.data(), p_.data() + pos_, d.size());
        pos_ += d.size();
        return d;
    }
    std::span<const uint8_t> rest() const { return p_.subspan(pos_); }

  private:
    std::span<const uint8_t> p_;
    std::size_t pos_ = 0;
};

bool need(std::span<const uint8_t> p, std::size_t bytes, bool exact, const char* what,
          std::string& error) {
    if (exact ? p.size() == bytes : p.size() >= bytes) return true;
    error = std::string(what) + ": payload holds " + std::to_string(p.size()) +
            " bytes, expected " + (exact ? "" : "at least ") + std::to_string(bytes);
    return false;
}

}  // namespace

Digest checksum(std::span<const uint8_t> bytes) {
    XXH128_canonical_t c;
    XXH128_canonicalFromHash(&c, XXH3_128bits(bytes.data(), bytes.size()));
    Digest d;
    std::memcpy(d.data(), c.digest, d.size());
    return d;
}

std::vector<uint8_t> encode(const BeginMsg& m) {
    Writer w(44);
    w.put(m.id);
    w.put(m.total_bytes);
    w.put(m.chunk_bytes);
    w.put(m.chunk_count);
    w.put(m.tag);
    w.put_bytes(m.digest);
    return std::move(w.bytes);
}

std::vector<uint8_t> encode(const StatusMsg& m) {
    Writer w(20 + m.held.size() / 8 + 1);
    w.put(m.id);
    w.put(m.session);
    w.put(m.credit);
    w.put(static_cast<uint32_t>(m.held.size()));
    std::vector<uint8_t> bitmap((m.held.size() + 7) / 8, 0);
    for (std::size_t i = 0; i < m.held.size(); ++i)
        if (m.held[i]) bitmap[i / 8] = static_cast<uint8_t>(bitmap[i / 8] | (1u << (i % 8)));
    w.put_bytes(bitmap);
    return std::move(w.bytes);
}

std::vector<uint8_t> encode_chunk(uint64_t id, uint32_t session, uint32_t index,
                                  std::span<const uint8_t> data) {
    Writer w(kChunkPrefixBytes + data.size());
    w.put(id);
    w.put(session);
    w.put(index);
    w.put_bytes(checksum(data));
    w.put_bytes(data);
    return std::move(w.bytes);
}

std::vector<uint8_t> encode(const CreditMsg& m) {
    Writer w(20);
    w.put(m.id);
    w.put(m.session);
    w.put(m.grant);
    w.put(m.resend);
    return std::move(w.bytes);
}

std::vector<uint8_t> encode_done(uint64_t id) {
    Writer w(8);
    w.put(id);
    return std::move(w.bytes);
}

std::vector<uint8_t> encode(const AbortMsg& m) {
    Writer w(8 + 256);
    w.put(m.id);
    const std::string reason = m.reason.substr(0, 256);
    w.put_bytes(
        std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(reason.data()), reason.size()));
    return std::move(w.bytes);
}

std::optional<BeginMsg> decode_begin(std::span<const uint8_t> p, std::string& error) {
    if (!need(p, 44, true, "transfer-begin", error)) return std::nullopt;
    Reader r(p);
    BeginMsg m;
    m.id = r.get<uint64_t>();
    m.total_bytes = r.get<uint64_t>();
    m.chunk_bytes = r.get<uint32_t>();
    m.chunk_count = r.get<uint32_t>();
    m.tag = r.get<uint32_t>();
    m.digest = r.digest();
    return m;
}

std::optional<StatusMsg> decode_status(std::span<const uint8_t> p, std::string& error) {
    if (!need(p, 20, false, "transfer-status", error)) return std::nullopt;
    Reader r(p);
    StatusMsg m;
    m.id = r.get<uint64_t>();
    m.session = r.get<uint32_t>();
    m.credit = r.get<uint32_t>();
    const uint32_t count = r.get<uint32_t>();
    if (!need(p, 20 + (static_cast<std::size_t>(count) + 7) / 8, true, "transfer-status bitmap",
              error))
        return std::nullopt;
    const auto bitmap = r.rest();
    m.held.resize(count);
    for (uint32_t i = 0; i < count; ++i) m.held[i] = (bitmap[i / 8] >> (i % 8)) & 1u;
    return m;
}

std::optional<ChunkView> decode_chunk(std::span<const uint8_t> p, std::string& error) {
    if (!need(p, kChunkPrefixBytes, false, "transfer-chunk", error)) return std::nullopt;
    Reader r(p);
    ChunkView c;
    c.id = r.get<uint64_t>();
    c.session = r.get<uint32_t>();
    c.index = r.get<uint32_t>();
    c.checksum = r.digest();
    c.data = r.rest();
    return c;
}

std::optional<CreditMsg> decode_credit(std::span<const uint8_t> p, std::string& error) {
    if (!need(p, 20, true, "transfer-credit", error)) return std::nullopt;
    Reader r(p);
    CreditMsg m;
    m.id = r.get<uint64_t>();
    m.session = r.get<uint32_t>();
    m.grant = r.get<uint32_t>();
    m.resend = r.get<uint32_t>();
    return m;
}

std::optional<uint64_t> decode_done(std::span<const uint8_t> p, std::string& error) {
    if (!need(p, 8, true, "transfer-done", error)) return std::nullopt;
    return Reader(p).get<uint64_t>();
}

std::optional<AbortMsg> decode_abort(std::span<const uint8_t> p, std::string& error) {
    if (!need(p, 8, false, "transfer-abort", error)) return std::nullopt;
    if (p.size() > 8 + 256) {
        error = "transfer-abort: reason longer than 256 bytes";
        return std::nullopt;
    }
    Reader r(p);
    AbortMsg m;
    m.id = r.get<uint64_t>();
    const auto rest = r.rest();
    m.reason.assign(rest.begin(), rest.end());
    return m;
}

std::optional<uint64_t> peek_transfer_id(std::span<const uint8_t> payload) {
    if (payload.size() < 8) return std::nullopt;
    return Reader(payload).get<uint64_t>();
}

}  // namespace arch::net
