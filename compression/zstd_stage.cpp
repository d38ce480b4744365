// compression/zstd_stage.cpp: the optional zstd stage after any codec, in independent chunks.
// Body: [u32 chunk_bytes][u32 chunks][chunks x u32 stored size, top bit set = stored raw][chunk data].
// Chunks of 1 MiB are compressed in parallel (OpenMP), each kept raw where zstd does not shrink it.
// Decompression checks every frame's declared content size against the chunk size the header
// implies before decompressing into a buffer of exactly that size, so nothing can expand past it.
#include <omp.h>
#include <zstd.h>

#include <algorithm>
#include <cstring>

#include "compression/detail.h"
#include "core/error.h"

namespace arch::compression::detail {
namespace {

constexpr std::uint32_t kZstdChunk = 1u << 20;
constexpr std::uint32_t kRawBit = 0x80000000u;
constexpr std::uint32_t kMaxChunk = 1u << 30;

}  // namespace

std::uint64_t zstd_stage_overhead(std::uint64_t payload_bytes) {
    return 8 + 4 * ((payload_bytes + kZstdChunk - 1) / kZstdChunk);
}

ZstdStageWriter::ZstdStageWriter(std::uint64_t payload_bytes, int level, std::size_t prefix, Bytes into)
    : payload_bytes_(payload_bytes), level_(level), prefix_(prefix) {
    const std::uint64_t chunks = (payload_bytes + kZstdChunk - 1) / kZstdChunk;
    if (chunks > 0xffffffffu) throw Error("zstd: payload of " + std::to_string(payload_bytes) + " bytes is too large");
    // Each chunk is compressed straight into the buffer that is sent, at a slot of zstd's bound for it
    // (at least its raw size), and the chunks are then moved together: no buffer per chunk beside it.
    slot_.resize(chunks + 1);
    slot_[0] = prefix + 8 + 4 * chunks;
    for (std::uint64_t c = 0; c < chunks; ++c)
        slot_[c + 1] = slot_[c] + ZSTD_compressBound(std::min<std::uint64_t>(kZstdChunk, payload_bytes - c * kZstdChunk));
    out_ = std::move(into);
    out_.resize(slot_[chunks]);  // zeroes only what goes beyond the size it had
    sizes_.assign(chunks, 0);
}

ZstdStageWriter::~ZstdStageWriter() {
    for (void* ctx : contexts_) ZSTD_freeCCtx(static_cast<ZSTD_CCtx*>(ctx));
}

std::uint32_t ZstdStageWriter::chunk_bytes() { return kZstdChunk; }

std::uint32_t ZstdStageWriter::chunks() const { return static_cast<std::uint32_t>(sizes_.size()); }

std::uint64_t ZstdStageWriter::raw_length(std::uint32_t c) const {
    return std::min<std::uint64_t>(kZstdChunk, payload_bytes_ - std::uint64_t(c) * kZstdChunk);
}

void ZstdStageWriter::compress(std::uint32_t first, std::uint32_t last, const std::function<const std::byte*(std::uint32_t)>& raw) {
    const int threads = omp_get_max_threads();
    if (contexts_.size() < static_cast<std::size_t>(threads)) contexts_.resize(threads, nullptr);
    int failed = 0;
#pragma omp parallel if (last - first > 1)
    {
        void*& mine = contexts_[omp_get_thread_num()];
        if (!mine && (mine = ZSTD_createCCtx()))
            ZSTD_CCtx_setParameter(static_cast<ZSTD_CCtx*>(mine), ZSTD_c_compressionLevel, level_);
        auto* ctx = static_cast<ZSTD_CCtx*>(mine);
#pragma omp for schedule(dynamic)
        for (std::int64_t i = first; i < static_cast<std::int64_t>(last); ++i) {
            const auto c = static_cast<std::uint32_t>(i);
            const std::byte* from = raw(c);
            const std::size_t len = raw_length(c);
            std::byte* to = out_.data() + slot_[c];
            const std::size_t room = slot_[c + 1] - slot_[c];
            const std::size_t r = ctx ? ZSTD_compress2(ctx, to, room, from, len) : 0;
            if (!ctx || ZSTD_isError(r)) {
#pragma omp atomic write
                failed = 1;
                continue;
            }
            if (r >= len) {  // zstd did not help: store the chunk raw (the bound is at least len)
                std::copy(from, from + len, to);
                sizes_[c] = static_cast<std::uint32_t>(len) | kRawBit;
            } else {
                sizes_[c] = static_cast<std::uint32_t>(r);
            }
        }
    }
    if (failed) throw Error("zstd: compression failed (out of memory?)");
}

Bytes ZstdStageWriter::finish() {
    const std::uint64_t chunks = sizes_.size();
    std::byte* body = out_.data() + prefix_;
    store_le(body, kZstdChunk);
    store_le(body + 4, static_cast<std::uint32_t>(chunks));
    std::uint64_t at = slot_[0];  // where the next chunk goes: never past its slot, so a forward move
    for (std::uint64_t c = 0; c < chunks; ++c) {
        store_le(body + 8 + 4 * c, sizes_[c]);
        const std::uint64_t stored = sizes_[c] & ~kRawBit;
        if (at != slot_[c]) std::memmove(out_.data() + at, out_.data() + slot_[c], stored);
        at += stored;
    }
    out_.resize(at);
    return std::move(out_);
}

Bytes zstd_compress(ByteSpan payload, int level, std::size_t prefix, Bytes into) {
    ZstdStageWriter stage(payload.size(), level, prefix, std::move(into));
    stage.compress(0, stage.chunks(), [&](std::uint32_t c) { return payload.data() + std::uint64_t(c) * ZstdStageWriter::chunk_bytes(); });
    return stage.finish();
}

ZstdChunks::ZstdChunks(ByteSpan body, std::uint64_t payload_bytes) : body_(body), payload_bytes_(payload_bytes) {
    if (body.size() < 8) throw Error("corrupt zstd stage: body of " + std::to_string(body.size()) + " bytes has no chunk table");
    chunk_ = load_le<std::uint32_t>(body.data());
    const auto chunks = load_le<std::uint32_t>(body.data() + 4);
    if (chunk_ == 0 || chunk_ > kMaxChunk) {
        throw Error("corrupt zstd stage: chunk size " + std::to_string(chunk_) + " is out of range");
    }
    const std::uint64_t expect_chunks = (payload_bytes + chunk_ - 1) / chunk_;
    if (chunks != expect_chunks) {
        throw Error("corrupt zstd stage: " + std::to_string(chunks) + " chunks, expected " +
                    std::to_string(expect_chunks) + " for " + std::to_string(payload_bytes) +
                    " payload bytes");
    }
    if (body.size() < 8 + 4ull * chunks) throw Error("corrupt zstd stage: chunk table is truncated");
    // Validate the whole table and every frame header before decompressing anything.
    offset_.resize(std::size_t{chunks} + 1);
    offset_[0] = 8 + 4ull * chunks;
    for (std::uint32_t c = 0; c < chunks; ++c) {
        const std::uint64_t stored = load_le<std::uint32_t>(body.data() + 8 + 4ull * c) & ~kRawBit;
        const std::uint64_t raw_len = raw_length(c);
        if (offset_[c] + stored > body.size()) {
            throw Error("corrupt zstd stage: chunk " + std::to_string(c) + " runs past the end of the buffer");
        }
        if (raw(c)) {
            if (stored != raw_len) {
                throw Error("corrupt zstd stage: raw chunk " + std::to_string(c) + " holds " +
                            std::to_string(stored) + " bytes, expected " + std::to_string(raw_len));
            }
        } else {
            const std::byte* f = body.data() + offset_[c];
            const unsigned long long content = ZSTD_getFrameContentSize(f, stored);
            if (content != raw_len) {
                throw Error("corrupt zstd stage: chunk " + std::to_string(c) + " frame declares " +
                            (content == ZSTD_CONTENTSIZE_UNKNOWN || content == ZSTD_CONTENTSIZE_ERROR
                                 ? std::string("no valid size")
                                 : std::to_string(content) + " bytes") +
                            ", expected " + std::to_string(raw_len));
            }
            if (ZSTD_findFrameCompressedSize(f, stored) != stored) {
                throw Error("corrupt zstd stage: chunk " + std::to_string(c) + " is not exactly one zstd frame");
            }
        }
        offset_[c + 1] = offset_[c] + stored;
    }
    if (offset_[chunks] != body.size()) {
        throw Error("corrupt zstd stage: " + std::to_string(body.size() - offset_[chunks]) + " trailing bytes");
    }
}

std::uint64_t ZstdChunks::raw_length(std::uint32_t c) const {
    return std::min<std::uint64_t>(chunk_, payload_bytes_ - std::uint64_t(c) * chunk_);
}

bool ZstdChunks::raw(std::uint32_t c) const { return (load_le<std::uint32_t>(body_.data() + 8 + 4ull * c) & kRawBit) != 0; }

bool ZstdChunks::take(std::uint32_t c, std::byte* dst, void* context) const {
    const std::byte* src = body_.data() + offset_[c];
    const std::size_t stored = offset_[c + 1] - offset_[c], raw_len = raw_length(c);
    if (raw(c)) {
        std::copy(src, src + stored, dst);
        return true;
    }
    const std::size_t r = context ? ZSTD_decompressDCtx(static_cast<ZSTD_DCtx*>(context), dst, raw_len, src, stored)
                                  : ZSTD_decompress(dst, raw_len, src, stored);
    return !ZSTD_isError(r) && r == raw_len;
}

void ZstdChunks::take(std::uint32_t c, std::byte* dst) const {
    if (!take(c, dst, nullptr)) throw Error("corrupt zstd stage: chunk " + std::to_string(c) + " does not decompress");
}

void zstd_decompress(ByteSpan body, std::uint64_t payload_bytes, Bytes& payload) {
    const ZstdChunks stage(body, payload_bytes);
    const std::uint32_t chunks = stage.count();
    payload.resize(payload_bytes);  // every byte is written below
    int failed = -1;
#pragma omp parallel if (chunks > 1)
    {
        ZSTD_DCtx* ctx = ZSTD_createDCtx();
#pragma omp for schedule(dynamic)
        for (std::int64_t c = 0; c < static_cast<std::int64_t>(chunks); ++c) {
            const std::uint32_t at = static_cast<std::uint32_t>(c);
            if (!ctx || !stage.take(at, payload.data() + std::uint64_t(at) * stage.chunk_bytes(), ctx)) {
#pragma omp critical(arch_zstd_fail)
                failed = static_cast<int>(c);
            }
        }
        ZSTD_freeDCtx(ctx);
    }
    if (failed >= 0) throw Error("corrupt zstd stage: chunk " + std::to_string(failed) + " does not decompress");
}

}  // namespace arch::compression::detail
