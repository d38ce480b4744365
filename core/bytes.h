// core/bytes.h: the project's one byte format. Every message, file header and state layout is
// written with ByteWriter and read with ByteReader (or, for a fixed layout at known offsets,
// store_le/load_le), in little-endian byte order whatever the machine, as std::byte.
// - Integers and floats: fixed width, little-endian.
// - str: u32 length, then the bytes; bytes: u64 length, then the bytes.
// - Arrays of floats (θ, optimizer state) are copied as they lie: the build refuses a big-endian
//   machine below, so they are little-endian too.
// ByteReader checks every length before it reads and throws arch::Error naming what it reads.
#pragma once

#include <bit>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <type_traits>
#include <vector>

#include "core/error.h"

namespace arch {

static_assert(std::endian::native == std::endian::little,
              "float arrays are written as they lie in memory, which is little-endian only on such machines");

// v at p, little-endian (T: an integer or a float).
template <class T>
inline void store_le(std::byte* p, T v) {
    static_assert(std::is_arithmetic_v<T>);
    std::memcpy(p, &v, sizeof(T));
}
template <class T>
inline T load_le(const std::byte* p) {
    static_assert(std::is_arithmetic_v<T>);
    T v;
    std::memcpy(&v, p, sizeof(T));
    return v;
}

// A string's bytes, as std::byte.
inline std::span<const std::byte> byte_view(const std::string& s) { return std::as_bytes(std::span(s.data(), s.size())); }

class ByteWriter {
public:
    ByteWriter() = default;
    // Writes into `reuse`'s memory (emptied first): a buffer kept from an earlier message of that size.
    explicit ByteWriter(std::vector<std::byte> reuse) : out_(std::move(reuse)) { out_.clear(); }

    void reserve(std::size_t n) { out_.reserve(n); }
    void u8(uint8_t v) { put(v); }
    void u16(uint16_t v) { put(v); }
    void u32(uint32_t v) { put(v); }
    void i32(int32_t v) { put(v); }
    void u64(uint64_t v) { put(v); }
    void f32(float v) { put(v); }
    void f64(double v) { put(v); }
    void raw(std::span<const std::byte> b) { out_.insert(out_.end(), b.begin(), b.end()); }
    void str(const std::string& s) {
        u32(static_cast<uint32_t>(s.size()));
        raw(byte_view(s));
    }
    void bytes(std::span<const std::byte> b) {
        u64(b.size());
        raw(b);
    }
    // The same layout as bytes(), for n bytes the caller writes into the returned span in place
    // (a large blob is then built without a second copy). Valid until the next call.
    std::span<std::byte> bytes_in_place(std::size_t n) {
        u64(n);
        return raw_in_place(n);
    }
    std::span<std::byte> raw_in_place(std::size_t n) {
        const std::size_t at = out_.size();
        grow(n);
        return std::span<std::byte>(out_.data() + at, n);
    }
    std::size_t size() const { return out_.size(); }
    std::vector<std::byte> take() { return std::move(out_); }
    // What take() would give after bytes(blob), built in blob's own memory: the bytes written so far
    // and blob's length go in front of it, which moves blob within its buffer and copies nothing into
    // fresh pages when it has that room (an encoded Δ or update has it: compression::kMessageHeadroom,
    // or what its zstd stage's bound left unused); without it, blob is copied once, as bytes() would.
    std::vector<std::byte> take_before(std::vector<std::byte> blob) {
        u64(blob.size());
        blob.insert(blob.begin(), out_.begin(), out_.end());
        out_.clear();
        return blob;
    }

private:
    template <class T>
    void put(T v) {
        store_le(raw_in_place(sizeof(T)).data(), v);
    }
    // Out of line: inlined, GCC 12 follows the vector's growth into each field's store and reports a
    // false -Wstringop-overflow (a write "into a region of size 0").
    [[gnu::noinline]] void grow(std::size_t n) { out_.resize(out_.size() + n); }
    std::vector<std::byte> out_;
};

class ByteReader {
public:
    // `what` names the input in errors ("welcome", "run state 'x'"); it must outlive the reader.
    ByteReader(std::span<const std::byte> in, const char* what) : in_(in), what_(what) {}

    uint8_t u8() { return get<uint8_t>(); }
    uint16_t u16() { return get<uint16_t>(); }
    uint32_t u32() { return get<uint32_t>(); }
    int32_t i32() { return get<int32_t>(); }
    uint64_t u64() { return get<uint64_t>(); }
    float f32() { return finite(get<float>()); }   // throws for inf or NaN
    double f64() { return finite(get<double>()); }
    // The next n bytes, not copied: valid while the input is.
    std::span<const std::byte> raw(std::size_t n) {
        need(n);
        const std::span<const std::byte> out = in_.subspan(pos_, n);
        pos_ += n;
        return out;
    }
    std::string str(std::size_t max_len = 1 << 20) {
        const std::span<const std::byte> b = raw(length(u32(), max_len, "string"));
        return std::string(reinterpret_cast<const char*>(b.data()), b.size());
    }
    std::span<const std::byte> view(std::size_t max_len) { return raw(length(u64(), max_len, "blob")); }
    std::vector<std::byte> bytes(std::size_t max_len) {
        const std::span<const std::byte> b = view(max_len);
        return {b.begin(), b.end()};
    }
    std::span<const std::byte> rest() { return raw(in_.size() - pos_); }
    std::size_t remaining() const { return in_.size() - pos_; }
    void finish() const {  // throws unless every byte was consumed
        if (pos_ != in_.size())
            throw Error(std::string(what_) + ": " + std::to_string(in_.size() - pos_) + " unexpected trailing bytes");
    }

private:
    template <class T>
    T get() {
        return load_le<T>(raw(sizeof(T)).data());
    }
    void need(std::size_t n) const {
        if (n > in_.size() - pos_)
            throw Error(std::string(what_) + ": message truncated (needs " + std::to_string(pos_ + n) + " bytes, has " +
                        std::to_string(in_.size()) + ")");
    }
    std::size_t length(uint64_t n, std::size_t max_len, const char* kind) const {
        if (n > max_len)
            throw Error(std::string(what_) + ": " + kind + " of " + std::to_string(n) + " bytes exceeds " +
                        std::to_string(max_len));
        return static_cast<std::size_t>(n);
    }
    template <class T>
    T finite(T v) const {
        if (!std::isfinite(v)) throw Error(std::string(what_) + ": non-finite number");
        return v;
    }
    std::span<const std::byte> in_;
    std::size_t pos_ = 0;
    const char* what_;
};

}  // namespace arch
