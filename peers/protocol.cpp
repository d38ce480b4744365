// peers/protocol.cpp: payload encoding and validated decoding.
#include "peers/protocol.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "core/bf16.h"
#include "core/bytes.h"
#include "core/error.h"

namespace arch::protocol {

const char* reason_name(ReasonCode code) {
    switch (code) {
        case ReasonCode::say_hello_first: return "say_hello_first";
        case ReasonCode::run_full: return "run_full";
        case ReasonCode::revoked: return "revoked";
        case ReasonCode::run_finished: return "run_finished";
        case ReasonCode::left: return "left";
        case ReasonCode::other: break;
    }
    return "other";
}

const char* type_name(Type t) {
    switch (t) {
        case Type::hello: return "hello";
        case Type::welcome: return "welcome";
        case Type::reject: return "reject";
        case Type::round_start: return "round_start";
        case Type::pseudo_grad: return "pseudo_grad";
        case Type::update: return "update";
        case Type::hash_report: return "hash_report";
        case Type::state: return "state";
        case Type::bye: return "bye";
        case Type::data_request: return "data_request";
        case Type::data: return "data";
        case Type::moments: return "moments";
    }
    return "unknown";
}

namespace {
constexpr std::size_t kHashLen = 64;  // hex: a data chunk's BLAKE2b-256, at most a θ hash (XXH3-128, 32)
std::string hash_field(ByteReader& r) {
    std::string h = r.str(kHashLen);
    for (char c : h)
        if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) throw Error("malformed θ hash in message");
    return h;
}
}  // namespace

std::vector<std::byte> encode(const Hello& m) {
    ByteWriter w;
    w.u32(m.protocol_version);
    w.str(m.name);
    w.u32(m.devices);
    w.f32(m.steps_per_s);
    w.u64(m.round);
    w.str(m.theta_hash);
    return w.take();
}
Hello decode_hello(std::span<const std::byte> b) {
    ByteReader r(b, "hello");
    Hello m;
    m.protocol_version = r.u32();
    if (m.protocol_version != kProtocolVersion)
        throw Error("hello: protocol version " + std::to_string(m.protocol_version) + ", this host speaks " +
                    std::to_string(kProtocolVersion));
    m.name = r.str(128);
    m.devices = r.u32();
    m.steps_per_s = r.f32();
    m.round = r.u64();
    m.theta_hash = hash_field(r);
    r.finish();
    return m;
}

std::vector<std::byte> encode(const Welcome& m) {
    ByteWriter w;
    w.u32(m.island_index);
    w.u32(m.num_islands);
    w.str(m.config_toml);
    w.u64(m.round);
    w.str(m.theta_hash);
    w.u32(m.data.vocab);
    w.u8(m.data.served ? 1 : 0);
    w.u8(m.data.token_bytes);
    w.u32(static_cast<uint32_t>(m.data.shards.size()));
    for (const ManifestShard& s : m.data.shards) {
        w.str(s.name);
        w.u64(s.tokens);
        w.str(s.hash);
    }
    w.u32(static_cast<uint32_t>(m.data.chunks.size()));
    for (const DataChunk& c : m.data.chunks) {
        w.u32(c.shard);
        w.u64(c.offset);
        w.u64(c.tokens);
        w.str(c.hash);
    }
    return w.take();
}
Welcome decode_welcome(std::span<const std::byte> b) {
    ByteReader r(b, "welcome");
    Welcome m;
    m.island_index = r.u32();
    m.num_islands = r.u32();
    m.config_toml = r.str(1 << 16);
    m.round = r.u64();
    m.theta_hash = hash_field(r);
    m.data.vocab = r.u32();
    m.data.served = r.u8() != 0;
    m.data.token_bytes = r.u8();
    if (m.data.token_bytes != 2 && m.data.token_bytes != 4)
        throw Error("welcome: data tokens of " + std::to_string(m.data.token_bytes) + " bytes (2 or 4)");
    const uint32_t shards = r.u32();
    if (shards == 0 || shards > (1u << 16)) throw Error("welcome: " + std::to_string(shards) + " data shards");
    for (uint32_t i = 0; i < shards; ++i) {
        ManifestShard s;
        s.name = r.str(255);
        if (s.name.empty() || s.name.find('/') != std::string::npos || s.name == "." || s.name == "..")
            throw Error("welcome: data shard name '" + s.name + "' is not a plain file name");
        s.tokens = r.u64();
        s.hash = hash_field(r);
        if (s.hash.size() != kHashLen) throw Error("welcome: data shard '" + s.name + "' has no hash");
        m.data.shards.push_back(std::move(s));
    }
    const uint32_t chunks = r.u32();
    if (chunks == 0 || chunks > (1u << 20)) throw Error("welcome: " + std::to_string(chunks) + " data chunks");
    for (uint32_t i = 0; i < chunks; ++i) {
        DataChunk c;
        c.shard = r.u32();
        c.offset = r.u64();
        c.tokens = r.u64();
        c.hash = hash_field(r);
        if (c.shard >= shards) throw Error("welcome: data chunk of shard " + std::to_string(c.shard) + " out of range");
        const uint64_t in_shard = m.data.shards[c.shard].tokens;
        if (c.tokens == 0 || c.tokens > kMaxChunkTokens || c.offset > in_shard || c.tokens > in_shard - c.offset ||
            c.hash.size() != kHashLen)
            throw Error("welcome: data chunk " + std::to_string(i) + " does not fit its shard");
        m.data.chunks.push_back(std::move(c));
    }
    r.finish();
    if (m.island_index >= m.num_islands) throw Error("welcome: island index out of range");
    return m;
}

std::vector<std::byte> encode(const RoundStart& m) {
    ByteWriter w;
    w.u64(m.round);
    w.u32(m.steps);
    w.str(m.theta_hash);
    w.u64(m.schedule_from);
    w.u64(m.schedule_to);
    w.u8(m.held ? 1 : 0);
    w.u64(m.held.value_or(0));
    return w.take();
}
RoundStart decode_round_start(std::span<const std::byte> b) {
    ByteReader r(b, "round_start");
    RoundStart m;
    m.round = r.u64();
    m.steps = r.u32();
    m.theta_hash = hash_field(r);
    m.schedule_from = r.u64();
    m.schedule_to = r.u64();
    const uint8_t held = r.u8();
    const uint64_t held_round = r.u64();
    r.finish();
    if (m.steps == 0 || m.steps > 1000000) throw Error("round_start: steps out of range");
    if (m.schedule_from > m.schedule_to) throw Error("round_start: schedule span ends before it begins");
    if (held > 1) throw Error("round_start: malformed held flag");
    if (held) {
        if (held_round >= m.round) throw Error("round_start: a held Δ must be of an earlier round");
        m.held = held_round;
    }
    return m;
}

std::vector<std::byte> encode(const PseudoGradMeta& m) {
    ByteWriter w;
    w.u64(m.round);
    w.f64(m.tokens);
    w.f32(m.mean_loss);
    w.u32(m.steps);
    w.f32(m.steps_per_s);
    return w.take();
}
PseudoGradMeta decode_pseudo_grad(std::span<const std::byte> b) {
    ByteReader r(b, "pseudo_grad");
    PseudoGradMeta m;
    m.round = r.u64();
    m.tokens = r.f64();
    m.mean_loss = r.f32();
    m.steps = r.u32();
    m.steps_per_s = r.f32();
    r.finish();
    if (!(m.tokens > 0)) throw Error("pseudo_grad: token count must be positive");
    return m;
}

std::vector<std::byte> encode(const UpdateMeta& m) {
    ByteWriter w;
    w.u64(m.round);
    w.str(m.theta_hash);
    w.u32(m.islands);
    w.f32(m.val_loss);
    w.u32(static_cast<uint32_t>(m.applied.size()));
    for (const Applied& a : m.applied) {
        w.u32(a.island);
        w.u64(a.round);
    }
    w.u32(static_cast<uint32_t>(m.moments_from.size()));
    for (const uint32_t island : m.moments_from) w.u32(island);
    return w.take();
}
UpdateMeta decode_update(std::span<const std::byte> b) {
    ByteReader r(b, "update");
    UpdateMeta m;
    m.round = r.u64();
    m.theta_hash = hash_field(r);
    m.islands = r.u32();
    m.val_loss = r.f32();
    const uint32_t n = r.u32();
    if (n > kMaxApplied) throw Error("update: " + std::to_string(n) + " contributions named");
    if (n != m.islands) throw Error("update: names " + std::to_string(n) + " contributions, counts " + std::to_string(m.islands));
    for (uint32_t i = 0; i < n; ++i) {
        Applied a;
        a.island = r.u32();
        a.round = r.u64();
        if (a.round > m.round) throw Error("update: a contribution of round " + std::to_string(a.round) + " in the update of " + std::to_string(m.round));
        m.applied.push_back(a);
    }
    const uint32_t k = r.u32();
    if (k > n) throw Error("update: moments of " + std::to_string(k) + " islands in an update of " + std::to_string(n));
    for (uint32_t i = 0; i < k; ++i) {
        const uint32_t island = r.u32();
        if (!std::any_of(m.applied.begin(), m.applied.end(), [&](const Applied& a) { return a.island == island; }))
            throw Error("update: moments of island " + std::to_string(island) + ", which it does not name as used");
        if (!m.moments_from.empty() && island <= m.moments_from.back())
            throw Error("update: the islands of its moments are not in increasing order");
        m.moments_from.push_back(island);
    }
    r.finish();
    return m;
}

std::vector<std::byte> encode(const StateMeta& m) {
    ByteWriter w;
    w.u64(m.round);
    w.str(m.theta_hash);
    return w.take();
}
StateMeta decode_state(std::span<const std::byte> b) {
    ByteReader r(b, "state");
    StateMeta m;
    m.round = r.u64();
    m.theta_hash = hash_field(r);
    r.finish();
    return m;
}

std::vector<std::byte> encode(const HashReport& m) {
    ByteWriter w;
    w.u64(m.round);
    w.str(m.theta_hash);
    return w.take();
}
HashReport decode_hash_report(std::span<const std::byte> b) {
    ByteReader r(b, "hash_report");
    HashReport m;
    m.round = r.u64();
    m.theta_hash = hash_field(r);
    r.finish();
    return m;
}

std::vector<std::byte> encode(const DataRequest& m) {
    ByteWriter w;
    w.u32(static_cast<uint32_t>(m.chunks.size()));
    for (uint32_t c : m.chunks) w.u32(c);
    return w.take();
}
DataRequest decode_data_request(std::span<const std::byte> b) {
    ByteReader r(b, "data_request");
    DataRequest m;
    const uint32_t n = r.u32();
    if (n == 0 || n > kMaxRequestChunks) throw Error("data_request: " + std::to_string(n) + " chunks (1.." +
                                                     std::to_string(kMaxRequestChunks) + ")");
    for (uint32_t i = 0; i < n; ++i) m.chunks.push_back(r.u32());
    r.finish();
    return m;
}

std::vector<std::byte> encode(const DataReply& m) {
    ByteWriter w;
    w.str(m.error);
    w.u32(static_cast<uint32_t>(m.chunks.size()));
    for (const auto& [index, tokens] : m.chunks) {
        w.u32(index);
        w.bytes(std::as_bytes(std::span(tokens)));  // the shard's own bytes
    }
    return w.take();
}
DataReply decode_data_reply(std::span<const std::byte> b) {
    ByteReader r(b, "data");
    DataReply m;
    m.error = r.str(4096);
    const uint32_t n = r.u32();
    if (n > kMaxRequestChunks) throw Error("data: " + std::to_string(n) + " chunks");
    for (uint32_t i = 0; i < n; ++i) {
        const uint32_t index = r.u32();
        m.chunks.emplace_back(index, r.bytes(4 * kMaxChunkTokens));  // the peer checks the size and hash
    }
    r.finish();
    return m;
}

std::vector<std::byte> encode(const Reason& m) {
    ByteWriter w;
    w.u32(static_cast<uint32_t>(m.code));
    w.str(m.text);
    return w.take();
}
Reason decode_reason(std::span<const std::byte> b) {
    ByteReader r(b, "reason");
    Reason m;
    const uint32_t code = r.u32();
    if (code > static_cast<uint32_t>(ReasonCode::left)) throw Error("reason code " + std::to_string(code) + " is unknown");
    m.code = static_cast<ReasonCode>(code);
    m.text = r.str(4096);
    r.finish();
    return m;
}

namespace {
void put_moments_header(std::span<std::byte> out, uint64_t round, uint64_t count) {
    store_le(out.data(), round);
    store_le(out.data() + 8, count);
}

// fp32 values at `from` rounded to bf16 at `to`, front to back: `to` may be `from` itself (each value
// is read before the two bytes it is written to are).
void round_to_bf16(const std::byte* from, std::byte* to, std::size_t n) {
    for (std::size_t i = 0; i < n; ++i) store_le(to + 2 * i, float_to_bf16(load_le<float>(from + 4 * i)));
}
}  // namespace

std::vector<std::byte> encode_moments(uint64_t round, std::span<const float> m, std::span<const float> v) {
    if (m.size() != v.size())
        throw Error("moments: m of " + std::to_string(m.size()) + " values, v of " + std::to_string(v.size()));
    const std::size_t n = m.size();
    std::vector<std::byte> out(moments_bytes(n));
    put_moments_header(out, round, n);
    if (n == 0) return out;
    round_to_bf16(reinterpret_cast<const std::byte*>(m.data()), out.data() + 16, n);
    round_to_bf16(reinterpret_cast<const std::byte*>(v.data()), out.data() + 16 + 2 * n, n);
    return out;
}

std::vector<std::byte> encode_moments(uint64_t round, std::size_t params,
                                      const std::function<void(const MomentSlicePut& put)>& read) {
    std::vector<std::byte> out(moments_bytes(params));
    put_moments_header(out, round, params);
    std::size_t next[2] = {0, 0};  // m's and v's next offset
    read([&](StateVector which, std::size_t offset, std::span<const float> values) {
        if (which == StateVector::params) throw Error("moments: a slice of the parameters, not of m or v");
        const int k = which == StateVector::m ? 0 : 1;
        if (offset != next[k] || values.size() > params - offset)
            throw Error(std::string("moments: a slice of ") + (k == 0 ? "m" : "v") + " at " + std::to_string(offset) +
                        " of " + std::to_string(values.size()) + " values, where " + std::to_string(next[k]) +
                        " of " + std::to_string(params) + " was next");
        round_to_bf16(reinterpret_cast<const std::byte*>(values.data()), out.data() + 16 + 2 * (k * params + offset),
                      values.size());
        next[k] += values.size();
    });
    if (next[0] != params || next[1] != params)
        throw Error("moments: " + std::to_string(next[0]) + " values of m and " + std::to_string(next[1]) + " of v, of " +
                    std::to_string(params));
    return out;
}

uint64_t moments_round(std::span<const std::byte> b) {
    if (b.size() < 16) throw Error("moments: " + std::to_string(b.size()) + " bytes, not even its header");
    return load_le<uint64_t>(b.data());
}

MomentsView check_moments(std::span<const std::byte> b, std::size_t params) {
    // The size first, so nothing is read in vain: exactly two sections of the model's size.
    if (b.size() != moments_bytes(params))
        throw Error("moments of " + std::to_string(b.size()) + " bytes, the model's take " +
                    std::to_string(moments_bytes(params)) + " (m and v of " + std::to_string(params) + " bf16 values)");
    MomentsView view;
    view.round = moments_round(b);
    const uint64_t count = load_le<uint64_t>(b.data() + 8);
    if (count != params)
        throw Error("moments of " + std::to_string(count) + " values, the model has " + std::to_string(params));
    view.count = params;
    view.m = b.data() + 16;
    view.v = view.m + 2 * params;
    const auto bad = [&](std::size_t k) {
        const uint16_t v = load_le<uint16_t>(view.v + 2 * k);
        return !bf16_is_finite(load_le<uint16_t>(view.m + 2 * k)) || !bf16_is_finite(v) || bf16_to_float(v) < 0;
    };
    // A run of values per thread; the first bad value is the lowest any run found, so the error is
    // the same on any number of threads.
    constexpr std::size_t kRun = std::size_t{1} << 16;
    const std::size_t runs = (params + kRun - 1) / kRun;
    std::size_t first_bad = params;
#pragma omp parallel for schedule(static) reduction(min : first_bad) if (runs > 1)
    for (std::size_t r = 0; r < runs; ++r)
        for (std::size_t k = r * kRun; k < std::min(params, (r + 1) * kRun); ++k)
            if (bad(k)) {
                first_bad = std::min(first_bad, k);
                break;
            }
    if (first_bad == params) return view;
    const std::size_t k = first_bad;
    if (!bf16_is_finite(load_le<uint16_t>(view.m + 2 * k))) throw Error("moments: m[" + std::to_string(k) + "] is not finite");
    throw Error("moments: v[" + std::to_string(k) + "] = " + std::to_string(view.v_at(k)) +
                " (a second moment is finite and not negative)");
}

Moments decode_moments(std::span<const std::byte> b, std::size_t params) {
    const MomentsView view = check_moments(b, params);
    Moments out;
    out.round = view.round;
    out.m.resize(params);
    out.v.resize(params);
    for (std::size_t k = 0; k < params; ++k) {
        out.m[k] = view.m_at(k);
        out.v[k] = view.v_at(k);
    }
    return out;
}

}  // namespace arch::protocol
