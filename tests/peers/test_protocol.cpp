// tests/peers/test_protocol.cpp: the run protocol's round_start and update as version 4 has them: the
// lr schedule placement and a held Δ in round_start, the contributions an update used, DES-LOC's
// moments and the islands whose moments an update holds; each round trips, and a malformed one is
// refused with its reason.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstring>

#include "core/error.h"
#include "core/bf16.h"
#include "peers/protocol.h"

using namespace arch;
using namespace arch::protocol;
using Catch::Contains;

namespace {
const std::string kHash(64, 'a');

std::vector<std::byte> update_meta(uint32_t islands, const std::vector<Applied>& applied, uint64_t round = 5,
                                   const std::vector<uint32_t>& moments_from = {}) {
    UpdateMeta m;
    m.round = round;
    m.theta_hash = kHash;
    m.islands = islands;
    m.val_loss = 3.5f;
    m.applied = applied;
    m.moments_from = moments_from;
    return encode(m);
}
}  // namespace

TEST_CASE("round_start carries the schedule placement and a held Δ, and refuses them malformed") {
    RoundStart m;
    m.round = 7;
    m.steps = 12;
    m.theta_hash = kHash;
    m.schedule_from = 350;
    m.schedule_to = 400;
    m.held = 6;
    const RoundStart back = decode_round_start(encode(m));
    CHECK(back.round == 7);
    CHECK(back.steps == 12);
    CHECK(back.schedule_from == 350);
    CHECK(back.schedule_to == 400);
    REQUIRE(back.held);
    CHECK(*back.held == 6);
    m.held.reset();
    CHECK_FALSE(decode_round_start(encode(m)).held);

    RoundStart bad = m;
    bad.schedule_from = 401;
    CHECK_THROWS_WITH(decode_round_start(encode(bad)), Contains("schedule span"));
    bad = m;
    bad.held = 7;  // a Δ of this very round cannot be held
    CHECK_THROWS_WITH(decode_round_start(encode(bad)), Contains("earlier round"));
    std::vector<std::byte> flag = encode(m);
    flag[flag.size() - 9] = std::byte{2};
    CHECK_THROWS_WITH(decode_round_start(flag), Contains("held flag"));
    std::vector<std::byte> short_one = encode(m);
    short_one.resize(short_one.size() - 1);
    CHECK_THROWS_AS(decode_round_start(short_one), Error);
}

TEST_CASE("an update names the contributions it used, as many as it counts, none from a later round") {
    const std::vector<Applied> used = {{0, 5}, {2, 4}, {3, 5}};
    const UpdateMeta back = decode_update(update_meta(3, used));
    CHECK(back.islands == 3);
    CHECK(back.applied == used);
    CHECK(back.val_loss == 3.5f);
    CHECK(decode_update(update_meta(0, {})).applied.empty());
    CHECK_THROWS_WITH(decode_update(update_meta(2, used)), Contains("names 3 contributions, counts 2"));
    CHECK_THROWS_WITH(decode_update(update_meta(1, {{1, 6}})), Contains("of round 6 in the update of 5"));
    std::vector<std::byte> huge = update_meta(0, {});
    const uint32_t n = kMaxApplied + 1;  // the count field, before the moments' count (the last 4 bytes)
    std::memcpy(huge.data() + huge.size() - 8, &n, 4);
    CHECK_THROWS_WITH(decode_update(huge), Contains("contributions named"));
}

TEST_CASE("a hello of another protocol version is refused with both versions") {
    Hello h;
    h.name = "old";
    h.protocol_version = 2;
    CHECK_THROWS_WITH(decode_hello(encode(h)), Contains("protocol version 2, this host speaks " + std::to_string(arch::protocol::kProtocolVersion)));
}

TEST_CASE("a reject or a bye carries its reason as a code; an unknown code or a cut one is refused") {
    const Reason r = decode_reason(encode(Reason{ReasonCode::revoked, "revoked"}));
    CHECK(r.code == ReasonCode::revoked);
    CHECK(r.text == "revoked");
    // What a peer acts on is the code: the same text under another code is no revocation.
    CHECK(decode_reason(encode(Reason{ReasonCode::other, "revoked"})).code == ReasonCode::other);
    std::vector<std::byte> b = encode(Reason{ReasonCode::left, "bye"});
    b[0] = std::byte{99};
    CHECK_THROWS_WITH(decode_reason(b), Contains("reason code 99 is unknown"));
    CHECK_THROWS(decode_reason(std::span<const std::byte>(b).first(3)));
}

TEST_CASE("DES-LOC: moments are m and v of the model's size in bf16, finite, v not negative; an update names whose it holds") {
    const std::vector<float> m = {0.5f, -1e-3f, 0.0f, 3.0e-5f}, v = {1e-8f, 0.0f, 2.0f, 7.7e-12f};
    const std::vector<std::byte> b = encode_moments(7, m, v);
    CHECK(b.size() == moments_bytes(4));
    CHECK(b.size() == 16 + 2 * 2 * 4);  // 2 bytes a value
    CHECK(moments_round(b) == 7);
    const Moments back = decode_moments(b, 4);
    CHECK(back.round == 7);
    for (std::size_t k = 0; k < m.size(); ++k) {  // rounded to nearest: within 2^-8 of each, relatively
        CHECK(back.m[k] == bf16_to_float(float_to_bf16(m[k])));
        CHECK(back.v[k] == bf16_to_float(float_to_bf16(v[k])));
        CHECK(std::fabs(back.m[k] - m[k]) <= std::ldexp(std::fabs(m[k]), -8));
        CHECK(std::fabs(back.v[k] - v[k]) <= std::ldexp(std::fabs(v[k]), -8));
        CHECK(back.v[k] >= 0);
    }
    CHECK(back.m[0] == 0.5f);
    CHECK(back.m[1] != m[1]);  // -1e-3 is not a bf16: it was rounded
    // Given a slice at a time by whoever holds the moments: the same bytes, whatever the slices.
    CHECK(encode_moments(7, 4, [&](const MomentSlicePut& put) {
              put(StateVector::m, 0, std::span(m).first(3));
              put(StateVector::m, 3, std::span(m).subspan(3));
              put(StateVector::v, 0, v);
          }) == b);
    // Slices that leave a gap, overlap, run past the end or fall short are refused.
    CHECK_THROWS_WITH(encode_moments(7, 4, [&](const MomentSlicePut& put) { put(StateVector::m, 1, std::span(m).first(3)); }),
                      Contains("a slice of m at 1 of 3 values, where 0 of 4 was next"));
    CHECK_THROWS_WITH(encode_moments(7, 4,
                                     [&](const MomentSlicePut& put) {
                                         put(StateVector::m, 0, m);
                                         put(StateVector::m, 2, std::span(m).first(2));
                                     }),
                      Contains("a slice of m at 2"));
    CHECK_THROWS_WITH(encode_moments(7, 3, [&](const MomentSlicePut& put) { put(StateVector::v, 0, v); }),
                      Contains("a slice of v at 0 of 4 values"));
    CHECK_THROWS_WITH(encode_moments(7, 4, [&](const MomentSlicePut& put) { put(StateVector::m, 0, m); }),
                      Contains("4 values of m and 0 of v, of 4"));
    CHECK_THROWS_WITH(decode_moments(b, 5), Contains("moments of 32 bytes, the model's take 36"));
    std::vector<std::byte> longer = b;
    longer.push_back(std::byte{0});
    CHECK_THROWS_WITH(decode_moments(longer, 4), Contains("the model's take 32"));
    auto poke = [&](std::size_t value_index, uint16_t x) {  // m[0..3], then v[0..3]
        std::vector<std::byte> bad = b;
        store_le(bad.data() + 16 + 2 * value_index, x);
        return bad;
    };
    CHECK_THROWS_WITH(decode_moments(poke(1, 0x7fc0), 4), Contains("m[1] is not finite"));      // NaN
    CHECK_THROWS_WITH(decode_moments(poke(6, 0x7f80), 4), Contains("v[2]"));                    // +infinity
    CHECK_THROWS_WITH(decode_moments(poke(4, float_to_bf16(-1e-9f)), 4), Contains("v[0]"));     // negative
    CHECK_THROWS_WITH(check_moments(poke(7, 0xff80), 4), Contains("v[3]"));                     // -infinity
    CHECK(check_moments(b, 4).v_at(2) == 2.0f);
    // A NaN or infinity stays one in bf16 (never rounded to a finite value): refused where it arrives.
    CHECK_THROWS_WITH(decode_moments(encode_moments(7, std::vector<float>{0, std::nanf(""), 0, 0}, v), 4), Contains("m[1] is not finite"));
    CHECK_THROWS_WITH(decode_moments(encode_moments(7, m, std::vector<float>{0, 0, -INFINITY, 0}), 4), Contains("v[2]"));
    CHECK(decode_moments(encode_moments(7, std::vector<float>{3.4e38f, 0, 0, 0}, v), 4).m[0] == bf16_to_float(0x7f7f));  // saturates
    CHECK_THROWS_AS(moments_round(std::vector<std::byte>(15)), Error);

    const std::vector<Applied> used = {{0, 5}, {2, 5}, {3, 4}};
    CHECK(decode_update(update_meta(3, used, 5, {0, 2})).moments_from == std::vector<uint32_t>{0, 2});
    CHECK(decode_update(update_meta(3, used)).moments_from.empty());
    CHECK_THROWS_WITH(decode_update(update_meta(3, used, 5, {1})), Contains("island 1, which it does not name"));
    CHECK_THROWS_WITH(decode_update(update_meta(3, used, 5, {2, 0})), Contains("increasing order"));
    CHECK_THROWS_WITH(decode_update(update_meta(3, used, 5, {0, 2, 3, 0})), Contains("moments of 4 islands"));
}
