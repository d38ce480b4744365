// compression/topk.cpp: top-k sparsification: the k = ceil(fraction n) largest |x| kept exactly.
// Payload: [u64 k][k x f32 value, in index order][k x LEB128 varint gap], gap_j = i_j - i_{j-1} - 1
// with i_{-1} = -1, so indices are strictly increasing by construction.
// Error bound: kept elements are exact; every dropped element has |x| <= the smallest kept |x|.
// Ties at the threshold are broken by lower index first, so encoding is deterministic.
#include <algorithm>
#include <cmath>
#include <vector>

#include "compression/detail.h"
#include "core/error.h"

namespace arch::compression::detail {
namespace {

inline std::uint32_t abs_bits(float v) { return std::bit_cast<std::uint32_t>(v) & 0x7fffffffu; }

// The largest t such that at least k elements have abs_bits >= t (k >= 1): a two-pass radix select
// on the 31 magnitude bits (16 high bits, then 15 low bits within the chosen high bin).
std::uint32_t kth_largest_bits(std::span<const float> x, std::uint64_t k) {
    const std::size_t n = x.size();
    std::vector<std::uint64_t> hist(1 << 16, 0);
    std::uint64_t* h = hist.data();
#pragma omp parallel for schedule(static) reduction(+ : h[ : 1 << 16]) if (n > 4 * kChunk)
    for (std::size_t i = 0; i < n; ++i) h[abs_bits(x[i]) >> 15] += 1;
    std::uint64_t above = 0;
    std::uint32_t hi = 0xffff;
    for (;; --hi) {
        if (above + hist[hi] >= k) break;
        above += hist[hi];
    }
    std::vector<std::uint64_t> low(1 << 15, 0);
    std::uint64_t* l = low.data();
#pragma omp parallel for schedule(static) reduction(+ : l[ : 1 << 15]) if (n > 4 * kChunk)
    for (std::size_t i = 0; i < n; ++i) {
        const std::uint32_t b = abs_bits(x[i]);
        if ((b >> 15) == hi) l[b & 0x7fffu] += 1;
    }
    std::uint32_t lo = 0x7fff;
    for (;; --lo) {
        if (above + low[lo] >= k) break;
        above += low[lo];
    }
    return (hi << 15) | lo;
}

inline void put_varint(Bytes& out, std::uint64_t v) {
    while (v >= 0x80) {
        out.push_back(static_cast<std::byte>((v & 0x7f) | 0x80));
        v >>= 7;
    }
    out.push_back(static_cast<std::byte>(v));
}

// Reads a varint at p[pos..end); advances pos. Throws on truncation or more than 64 bits.
inline std::uint64_t get_varint(const std::byte* p, std::size_t& pos, std::size_t end) {
    std::uint64_t v = 0;
    for (int shift = 0; shift < 64; shift += 7) {
        if (pos >= end) throw Error("corrupt payload: topk index list is truncated");
        const auto b = static_cast<std::uint8_t>(p[pos++]);
        if (shift == 63 && b > 1) break;
        v |= std::uint64_t(b & 0x7f) << shift;
        if (!(b & 0x80)) return v;
    }
    throw Error("corrupt payload: topk index gap does not fit in 64 bits");
}

}  // namespace

std::uint64_t topk_count(std::uint64_t n, double fraction) {
    if (n == 0) return 0;
    const double k = std::ceil(fraction * double(n));
    return std::clamp<std::uint64_t>(static_cast<std::uint64_t>(k), 1, n);
}

Bytes encode_topk(std::span<const float> x, double fraction, float* subtract_from) {
    require_finite(x, "topk");
    const std::uint64_t n = x.size(), k = topk_count(n, fraction);
    Bytes out = payload_buffer(8 + 4 * k, 2 * k);
    store_le(out.data(), k);
    if (k == 0) return out;
    const std::uint32_t t = kth_largest_bits(x, k);
    std::uint64_t strictly_above = 0;
#pragma omp parallel for schedule(static) reduction(+ : strictly_above) if (n > 4 * kChunk)
    for (std::size_t i = 0; i < n; ++i) strictly_above += abs_bits(x[i]) > t;
    std::uint64_t ties_left = k - strictly_above;

    std::uint64_t j = 0, prev_plus_one = 0;
    for (std::size_t i = 0; i < n && j < k; ++i) {
        const std::uint32_t b = abs_bits(x[i]);
        if (b < t || (b == t && ties_left == 0)) continue;
        if (b == t) --ties_left;
        store_le(out.data() + 8 + 4 * j, x[i]);
        if (subtract_from) subtract_from[i] = x[i] - x[i];  // what decode gives back, taken off: 0, exactly
        put_varint(out, i - prev_plus_one);
        prev_plus_one = i + 1;
        ++j;
    }
    return out;
}

std::uint64_t check_topk(ByteSpan payload, std::uint64_t n, std::vector<TopkMark>* marks) {
    if (payload.size() < 8) throw Error("corrupt payload: topk payload is shorter than its count");
    const auto k = load_le<std::uint64_t>(payload.data());
    if (k > n) {
        throw Error("corrupt payload: topk keeps " + std::to_string(k) + " elements of " +
                    std::to_string(n));
    }
    if (payload.size() < 8 + 4 * k + k) {
        throw Error("corrupt payload: topk payload of " + std::to_string(payload.size()) +
                    " bytes cannot hold " + std::to_string(k) + " values and indices");
    }
    require_finite_payload(payload.data() + 8, k, "topk value");
    if (marks) marks->clear();
    const std::byte* p = payload.data();
    const std::size_t end = payload.size();
    std::size_t pos = 8 + 4 * k;
    std::uint64_t next = 0;  // smallest index the next element may have
    for (std::uint64_t j = 0; j < k; ++j) {
        if (marks && j % kTopkMarkEvery == 0) marks->push_back({j, pos, next});
        const std::uint64_t gap = get_varint(p, pos, end);
        if (gap >= n - next) {
            throw Error("corrupt payload: topk index " + std::to_string(j) + " is out of range (n = " +
                        std::to_string(n) + ")");
        }
        next += gap + 1;
    }
    if (pos != end) {
        throw Error("corrupt payload: topk payload has " + std::to_string(end - pos) +
                    " trailing bytes");
    }
    return k;
}

void decode_topk(ByteSpan payload, std::span<float> out) {
    const std::uint64_t k = check_topk(payload, out.size(), nullptr);  // every index, before anything is written
    std::fill(out.begin(), out.end(), 0.0f);
    const std::byte* p = payload.data();
    std::size_t pos = 8 + 4 * k;
    std::uint64_t next = 0;
    for (std::uint64_t j = 0; j < k; ++j) {
        const std::uint64_t i = next + get_varint(p, pos, payload.size());
        out[i] = load_le<float>(p + 8 + 4 * j);
        next = i + 1;
    }
}

void decode_topk_slice(ByteSpan payload, std::span<const TopkMark> marks, std::uint64_t first, std::span<float> out) {
    std::fill(out.begin(), out.end(), 0.0f);
    if (marks.empty()) return;  // k = 0
    const std::uint64_t k = load_le<std::uint64_t>(payload.data()), last = first + out.size();
    // The last mark whose element cannot come before `first`'s: every element before it lies before the slice.
    const auto after = std::upper_bound(marks.begin(), marks.end(), first,
                                        [](std::uint64_t at, const TopkMark& m) { return at < m.next; });
    const TopkMark& from = after == marks.begin() ? marks.front() : *std::prev(after);
    const std::byte* p = payload.data();
    std::size_t pos = from.pos;
    std::uint64_t next = from.next;
    for (std::uint64_t j = from.entry; j < k; ++j) {
        const std::uint64_t i = next + get_varint(p, pos, payload.size());
        if (i >= last) return;
        if (i >= first) out[i - first] = load_le<float>(p + 8 + 4 * j);
        next = i + 1;
    }
}

}  // namespace arch::compression::detail
