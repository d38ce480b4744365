// compression/pipeline.cpp: spec strings -> a codec pipeline: quantizer [+ error feedback] [+ zstd].
// Error feedback keeps, per stream, the residual r = (x + r_prev) - decode(encode(x + r_prev)) and
// adds it to the next input of that stream; the wire bytes are those of the inner codec, so the
// receiver needs no state. Grammar and defaults: codec.h and docs/codecs.md.
#include <zstd.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <functional>
#include <memory>
#include <mutex>

#include "compression/detail.h"
#include "compression/held_payload.h"
#include "core/error.h"

namespace arch::compression {
namespace {

using detail::Bytes;
using detail::Format;

Format format_of(const CodecSpec& s) { return Format{s.codec, s.block, s.fraction}; }

std::vector<std::string_view> split(std::string_view s, char sep) {
    std::vector<std::string_view> parts;
    std::size_t start = 0;
    for (;;) {
        const std::size_t at = s.find(sep, start);
        parts.push_back(s.substr(start, at == std::string_view::npos ? at : at - start));
        if (at == std::string_view::npos) return parts;
        start = at + 1;
    }
}

[[noreturn]] void bad_spec(std::string_view spec, const std::string& why) {
    throw Error("codec spec '" + std::string(spec) + "': " + why);
}

long long parse_int(std::string_view spec, std::string_view key, std::string_view v) {
    long long out = 0;
    const auto [p, ec] = std::from_chars(v.data(), v.data() + v.size(), out);
    if (ec != std::errc() || p != v.data() + v.size() || v.empty()) {
        bad_spec(spec, std::string(key) + " must be an integer, got '" + std::string(v) + "'");
    }
    return out;
}

double parse_fraction(std::string_view spec, std::string_view v) {
    // from_chars for double is not in every libstdc++ we target; strtod on a copy is exact enough.
    const std::string s(v);
    char* end = nullptr;
    const double f = s.empty() ? NAN : std::strtod(s.c_str(), &end);
    if (s.empty() || end != s.c_str() + s.size() || !(f > 0.0 && f <= 1.0)) {
        bad_spec(spec, "frac must be a number in (0, 1], got '" + s + "'");
    }
    return f;
}

CodecId codec_by_name(std::string_view spec, std::string_view name) {
    for (CodecId id : kCodecIds) {
        if (codec_name(id) == name) return id;
    }
    bad_spec(spec, "unknown codec '" + std::string(name) +
                       "' (expected fp32, fp16, bf16, int8, uint8, int4, fp4, topk or sign)");
}

std::uint32_t default_block(CodecId id) {
    switch (id) {
        case CodecId::int8: return 256;
        case CodecId::int4:
        case CodecId::fp4: return 128;
        case CodecId::sign: return 4096;
        default: return 0;
    }
}

void parse_codec_stage(std::string_view spec, std::string_view stage, CodecSpec& f) {
    const std::size_t colon = stage.find(':');
    f.codec = codec_by_name(spec, stage.substr(0, colon));
    f.block = default_block(f.codec);
    f.fraction = f.codec == CodecId::topk ? 0.01 : 0.0;
    if (colon == std::string_view::npos) return;
    for (std::string_view kv : split(stage.substr(colon + 1), ',')) {
        const std::size_t eq = kv.find('=');
        if (eq == std::string_view::npos) {
            bad_spec(spec, "expected key=value in '" + std::string(stage) + "', got '" +
                               std::string(kv) + "'");
        }
        const std::string_view key = kv.substr(0, eq), value = kv.substr(eq + 1);
        if (key == "block" && detail::is_blockwise(f.codec)) {
            const long long b = parse_int(spec, key, value);
            if (b < 8 || b > (1 << 24) || b % 8 != 0) {
                bad_spec(spec, "block must be a multiple of 8 in [8, 16777216], got " + std::string(value));
            }
            f.block = static_cast<std::uint32_t>(b);
        } else if (key == "frac" && f.codec == CodecId::topk) {
            f.fraction = parse_fraction(spec, value);
        } else {
            bad_spec(spec, "codec " + std::string(codec_name(f.codec)) + " has no parameter '" +
                               std::string(key) + "'");
        }
    }
}

void parse_zstd_stage(std::string_view spec, std::string_view stage, CodecSpec& s) {
    s.zstd = true;
    if (stage == "zstd") return;
    std::string_view v = stage.substr(5);
    if (v.starts_with("level=")) v.remove_prefix(6);
    const long long level = parse_int(spec, "zstd level", v);
    const int min_level = std::max(-7, ZSTD_minCLevel());  // below -7 zstd barely compresses
    if (level < min_level || level > ZSTD_maxCLevel() || level == 0) {
        bad_spec(spec, "zstd level must be in [" + std::to_string(min_level) + ", -1] or [1, " +
                           std::to_string(ZSTD_maxCLevel()) + "], got " + std::string(v));
    }
    s.zstd_level = static_cast<int>(level);
}

}  // namespace

CodecSpec parse_codec_spec(std::string_view spec) {
    if (spec.empty()) bad_spec(spec, "empty spec");
    const std::vector<std::string_view> stages = split(spec, '+');
    CodecSpec s;
    parse_codec_stage(spec, stages[0], s);
    for (std::size_t i = 1; i < stages.size(); ++i) {
        const std::string_view st = stages[i];
        if (st == "ef") {
            if (s.error_feedback || s.zstd) bad_spec(spec, "'ef' must come once, right after the codec");
            s.error_feedback = true;
        } else if (st == "zstd" || st.starts_with("zstd:")) {
            if (s.zstd) bad_spec(spec, "'zstd' may appear only once");
            parse_zstd_stage(spec, st, s);
        } else {
            bad_spec(spec, "unknown stage '" + std::string(st) + "' (expected ef or zstd[:level])");
        }
    }
    return s;
}

std::string canonical_spec(const CodecSpec& s) {
    std::string out(codec_name(s.codec));
    if (detail::is_blockwise(s.codec)) out += ":block=" + std::to_string(s.block);
    if (s.codec == CodecId::topk) {
        char buf[32];
        std::snprintf(buf, sizeof buf, "%.17g", s.fraction);
        out += ":frac=" + std::string(buf);
    }
    if (s.error_feedback) out += "+ef";
    if (s.zstd) out += "+zstd:" + std::to_string(s.zstd_level);
    return out;
}

namespace {

class Pipeline final : public Codec {
public:
    explicit Pipeline(CodecSpec s) : spec_(s), format_(format_of(s)) {}

    std::string spec() const override { return canonical_spec(spec_); }
    const CodecSpec& settings() const override { return spec_; }

    std::vector<std::byte> encode(std::span<const float> x, std::uint64_t stream) override {
        if (!spec_.error_feedback) {
            if (streams_zstd()) return streamed(x, nullptr);
            Bytes returned = returned_->take();
            Bytes payload = detail::encode_payload(format_, x, spec_.zstd ? nullptr : &returned);
            return finish(x.size(), payload, std::move(returned));
        }
        std::vector<float>& r = residuals_[stream];
        if (r.empty()) r.assign(x.size(), 0.0f);
        if (r.size() != x.size()) {
            throw Error("error feedback stream " + std::to_string(stream) + " holds " +
                        std::to_string(r.size()) + " elements, got " + std::to_string(x.size()) +
                        " (reset the stream when its size changes)");
        }
        // r becomes y = x + r_prev in place, then y - decode(encode(y)); the decoded values go to a
        // buffer kept from the last call, so a round allocates nothing the size of x.
        const std::size_t n = x.size();
        float z = 0.0f;  // (x + r) * 0 is 0 when finite, NaN otherwise: a sum that vectorizes
#pragma omp parallel for simd schedule(static) reduction(+ : z) if (n > (1 << 18))
        for (std::size_t i = 0; i < n; ++i) z += (x[i] + r[i]) * 0.0f;
        if (z != 0.0f) {  // the quantizer's own error names the element; r is left as it was
            std::vector<float> y(n);
            for (std::size_t i = 0; i < n; ++i) y[i] = x[i] + r[i];
            detail::require_finite(y, codec_name(spec_.codec));
        }
#pragma omp parallel for schedule(static) if (n > (1 << 18))
        for (std::size_t i = 0; i < n; ++i) r[i] = x[i] + r[i];
        return encode_and_subtract(r);
    }

    std::vector<std::byte> encode_feedback(std::span<float> y, bool known_finite) override {
        if (!known_finite) detail::require_finite(y, codec_name(spec_.codec));  // before anything of y changes
        return encode_and_subtract(y);
    }

    std::span<const float> residual(std::uint64_t stream) const override {
        const auto it = residuals_.find(stream);
        return it == residuals_.end() ? std::span<const float>{} : std::span<const float>(it->second);
    }

    void reset(std::uint64_t stream) override { residuals_.erase(stream); }

    std::function<void(std::vector<std::byte>&&)> recycler() override {
        return [spare = returned_](std::vector<std::byte>&& bytes) { spare->give(std::move(bytes)); };
    }

    void set_residual(std::uint64_t stream, std::span<const float> r) override {
        if (!spec_.error_feedback) return;
        if (r.empty()) {
            residuals_.erase(stream);
            return;
        }
        residuals_[stream].assign(r.begin(), r.end());
    }

private:
    // y finite (checked by the caller), so no block is refused once y starts to change.
    std::vector<std::byte> encode_and_subtract(std::span<float> y) {
        if (streams_zstd()) return streamed(y, y.data());
        Bytes returned = returned_->take();
        Bytes* memory = spec_.zstd ? nullptr : &returned;
        std::optional<Bytes> payload = detail::encode_payload_subtracting(format_, y, memory);
        if (!payload) {
            payload = detail::encode_payload(format_, y, memory);
            subtract_decoded(*payload, y);
        }
        return finish(y.size(), *payload, std::move(returned));
    }

    // A blockwise codec's zstd stage is made a window at a time: its payload is never whole in memory.
    bool streams_zstd() const { return spec_.zstd && detail::is_blockwise(format_.id); }
    Bytes streamed(std::span<const float> x, float* subtract_from) {
        detail::ZstdTarget target{spec_.zstd_level, kWireHeaderBytes, returned_->take()};
        std::optional<Bytes> out = detail::encode_zstd_stage(format_, x, subtract_from, target);
        detail::write_wire_header(format_, x.size(), true, target.payload_bytes, *out);
        return std::move(*out);
    }

    // The wire's blob: the payload itself (in the memory a blob gave back, where it fit), or its zstd
    // stage written in that memory. The payload before a zstd stage is not kept: between rounds it
    // would add its size to the peak of whoever holds this codec.
    std::vector<std::byte> finish(std::size_t count, Bytes& payload, Bytes returned) {
        return detail::wrap(format_, count, payload, spec_.zstd, spec_.zstd_level, std::move(returned));
    }

    // A blob's memory given back from any thread (recycler()), until the next encode takes it.
    struct Returned {
        std::mutex mu;
        Bytes bytes;
        void give(Bytes&& b) {
            std::lock_guard<std::mutex> lock(mu);
            bytes = std::move(b);
        }
        Bytes take() {
            std::lock_guard<std::mutex> lock(mu);
            return std::move(bytes);
        }
    };

    // r -= decode(payload), a slice at a time, so error feedback keeps no decoded copy the size of the
    // model (the codecs that subtract as they encode never come here).
    void subtract_decoded(const Bytes& payload, std::span<float> r) {
        const std::size_t n = r.size();
        const std::size_t slice = static_cast<std::size_t>(slice_length(detail::slice_alignment(spec_.codec, spec_.block)));
        for (std::size_t first = 0; first < n; first += slice) {
            const std::size_t len = std::min(slice, n - first);
            if (decoded_.size() < len) decoded_.resize(len);
            const std::span<float> d = std::span(decoded_).first(len);
            detail::decode_payload_slice(spec_.codec, spec_.block, n, payload, first, d, slice_scratch_);
            float* rs = r.data() + first;
#pragma omp parallel for schedule(static) if (len > (1 << 18))
            for (std::size_t i = 0; i < len; ++i) rs[i] = rs[i] - d[i];
        }
    }

    CodecSpec spec_;
    Format format_;  // what the quantizer needs of spec_
    std::map<std::uint64_t, std::vector<float>> residuals_;
    std::vector<float> decoded_;  // a slice of error feedback's decode of the last payload
    Bytes slice_scratch_;         // that slice's part of the payload
    std::shared_ptr<Returned> returned_ = std::make_shared<Returned>();  // shared with the recyclers handed out
};

}  // namespace

namespace {
// topk: what k = ceil(frac · count) values and their index gaps can take, where any k a decoder
// accepts could take 3.5 times fp32's bytes.
std::uint64_t spec_payload_limit(const CodecSpec& s, std::uint64_t count) {
    if (s.codec == CodecId::topk) {
        const std::uint64_t k = detail::topk_count(count, s.fraction);
        return detail::payload_bytes_limit(s.codec, s.block, k);
    }
    return detail::payload_bytes_limit(s.codec, s.block, count);
}
}  // namespace

std::uint64_t payload_bytes_limit(std::string_view spec, std::uint64_t count) {
    return spec_payload_limit(parse_codec_spec(spec), count);
}

std::uint64_t wire_bytes_limit(std::string_view spec, std::uint64_t count) {
    const CodecSpec s = parse_codec_spec(spec);
    const std::uint64_t payload = spec_payload_limit(s, count);
    return kWireHeaderBytes + payload + (s.zstd ? detail::zstd_stage_overhead(payload) : 0);
}

std::unique_ptr<Codec> make_codec(std::string_view spec) {
    return std::make_unique<Pipeline>(parse_codec_spec(spec));
}

std::vector<std::byte> wrap_payload(std::string_view spec, std::uint64_t count,
                                    std::vector<std::byte> payload) {
    const CodecSpec s = parse_codec_spec(spec);
    if (s.error_feedback) {
        bad_spec(spec, "wrap_payload takes no '+ef': the residual belongs to whoever quantized");
    }
    const std::uint64_t want = detail::payload_bytes_limit(s.codec, s.block, count);
    const bool exact = detail::payload_size_is_exact(s.codec);
    if (exact ? payload.size() != want : payload.size() > want) {
        throw Error("wrap_payload: a " + std::string(codec_name(s.codec)) + " payload for " +
                    std::to_string(count) + " elements holds " + (exact ? "" : "at most ") +
                    std::to_string(want) + " bytes, got " + std::to_string(payload.size()));
    }
    return detail::wrap(format_of(s), count, payload, s.zstd, s.zstd_level);
}

}  // namespace arch::compression
