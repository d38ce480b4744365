// peers/protocol.h: the run protocol between host and peers: message types and their payloads,
// encoded little-endian with explicit lengths. Every decode checks sizes and limits and throws
// arch::Error on anything malformed (the caller logs, drops the message, and keeps its state).
// Identity never travels in a payload: the host knows a peer by its CURVE key (ZAP User-Id).
// Large payloads (pseudo-gradients, updates, the global state) travel through net's chunked
// transfers; the messages here describe them. Sequence of a sync round: docs/protocol.md.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "core/adamw.h"
#include "core/bf16.h"
#include "core/bytes.h"
#include "core/data_manifest.h"

namespace arch::protocol {

// 2: the welcome carries the data assignment; 3: round_start places the steps in the lr schedule and
// names a Δ still held, an update names the contributions it applied; 4: DES-LOC's `moments`, and the
// update's mean of them.
constexpr uint32_t kProtocolVersion = 10;  // 10: DES-LOC's moments in bf16; 9: an update is the change of θ, the state θ alone; 8: θ hashes are XXH3-128; 7: reject and bye carry a reason code; 6: transfers checksum with XXH3-128 (5: the welcome names the token width)

enum class Type : uint16_t {
    // net/message.h reserves types below 0x0100 for its transfers.
    hello = 0x0100,        // peer -> host: join or rejoin
    welcome = 0x0101,      // host -> peer: admitted, run config, island index
    reject = 0x0102,       // host -> peer: refused, with a reason
    round_start = 0x0103,  // host -> peer: start round r from θ with hash h, for `steps` inner steps
    pseudo_grad = 0x0104,  // peer -> host: (transfer) encoded Δ of round r + metadata
    update = 0x0105,       // host -> peer: (transfer) encoded aggregated update that ends round r
    hash_report = 0x0106,  // peer -> host: θ hash after applying an update or a state
    state = 0x0107,        // host -> peer: (transfer) the full global state (late joiner / resync)
    bye = 0x0108,          // both ways: leaving
    data_request = 0x0109, // peer -> host: send me these chunks of my data assignment
    data = 0x010A,         // host -> peer: (transfer) the tokens of requested chunks, or why not
    moments = 0x010B,      // peer -> host: (transfer) DES-LOC: the island's inner AdamW m and v after round r
};
const char* type_name(Type t);

struct Hello {
    uint32_t protocol_version = kProtocolVersion;
    std::string name;
    uint32_t devices = 1;
    float steps_per_s = 0;   // measured inner speed (0: unknown yet)
    uint64_t round = 0;      // the round the peer's θ belongs to (after its last update)
    std::string theta_hash;  // empty: the peer has no θ yet
};
// What an island trains on, named by content (core/data_manifest.h): the peer finds the chunks in
// its own data folders by hash, or fetches them from the host. Never a path.
struct DataAssignment {
    uint32_t vocab = 0;                 // the host's tokenizer's vocabulary (the model's, when run.toml leaves it 0)
    bool served = true;                 // the host sends these chunks on request (data.serve)
    uint8_t token_bytes = 2;            // the shards' width: 2 (uint16) or 4 (uint32)
    std::vector<ManifestShard> shards;  // every shard of the data set
    std::vector<DataChunk> chunks;      // this island's chunks, in training order
};
struct Welcome {
    uint32_t island_index = 0;
    uint32_t num_islands = 0;
    std::string config_toml;
    uint64_t round = 0;  // the round the host is in
    std::string theta_hash;
    DataAssignment data;
};
constexpr uint32_t kMaxRequestChunks = 256;    // per data_request; the host answers with one data blob
constexpr uint64_t kMaxReplyTokens = 2u << 20;  // 4 or 8 MiB of tokens in one reply (a single chunk may be up to kMaxChunkTokens)
struct DataRequest {
    std::vector<uint32_t> chunks;  // indices into the island's DataAssignment::chunks
};
struct DataReply {
    std::string error;  // non-empty: the host could not serve them (data.serve off, a shard it cannot read)
    // index, the chunk's tokens as the shard stores them (little-endian, the assignment's token_bytes each)
    std::vector<std::pair<uint32_t, std::vector<std::byte>>> chunks;
};
struct RoundStart {
    uint64_t round = 0;
    uint32_t steps = 0;  // H for this island (Dynamic Local Updates in async mode)
    std::string theta_hash;
    // The positions [from, to) of the run's inner lr schedule (run.rounds x H long) these steps are
    // spread over (peers/rounds/local_steps.h).
    uint64_t schedule_from = 0, schedule_to = 0;
    // A Δ of this island, by the round it was started on, that the host still holds for a later
    // update; every other Δ it sent that no update named was dropped (docs/rounds.md).
    std::optional<uint64_t> held;
};
struct PseudoGradMeta {
    uint64_t round = 0;       // the round whose θ the island started from
    double tokens = 0;
    float mean_loss = 0;
    uint32_t steps = 0;
    float steps_per_s = 0;
};
struct Applied {  // one pseudo-gradient an update used
    uint32_t island = 0;
    uint64_t round = 0;        // the round that island was started on
    bool operator==(const Applied&) const = default;
};
constexpr uint32_t kMaxApplied = 1u << 16;
struct UpdateMeta {
    uint64_t round = 0;        // the round this update ends (θ_round -> θ_round+1)
    std::string theta_hash;    // hash of θ after applying it
    uint32_t islands = 0;      // contributions aggregated
    float val_loss = -1;       // the host's newest val loss, of this θ or an earlier one (evaluated beside the rounds; -1: none yet)
    std::vector<Applied> applied;  // the contributions it used, in the order aggregated (islands of them)
    // DES-LOC: the islands (each one of `applied`, in island order) whose moments the update's mean
    // holds; empty: the update carries no moments. Those islands replace theirs with the mean.
    std::vector<uint32_t> moments_from;
};
struct StateMeta {
    uint64_t round = 0;        // θ is the state at the start of this round
    std::string theta_hash;
};
struct HashReport {
    uint64_t round = 0;
    std::string theta_hash;
};
// DES-LOC (run.toml outer.sync_moments_every; peers/moment_sync.h): an island's inner AdamW moments
// after the round it trained (peer -> host: a `moments` blob, sent just before that round's
// pseudo-gradient), or their mean (host -> peer: the last section of the update). In bf16
// (core/bf16.h, protocol 10): fp32's exponent, so v keeps its whole range (it spans many orders of
// magnitude within a block: an 8- or 4-bit block code would round its small values to 0, and AdamW
// divides by sqrt(v)), and 8 bits of precision, a relative 2^-8 at most on each value, half fp32's
// bytes. The mean is taken in fp32 and rounded once.
struct Moments {
    uint64_t round = 0;    // the round the island trained; in an update, the round the update ends
    std::vector<float> m, v;
};
// The exact encoded size for a model of `params` parameters: u64 round, u64 count, m, then v.
constexpr uint64_t moments_bytes(uint64_t params) { return 16 + 4 * params; }
// m and v rounded to bf16 (finite values: the caller's to check).
std::vector<std::byte> encode_moments(uint64_t round, std::span<const float> m, std::span<const float> v);
// The same blob for `params` values of an island's AdamW state in fp32, given a slice at a time:
// read(put) calls put(which, offset, values) with m's slices in order, then v's, each rounded to bf16
// into the blob as it comes, so nothing of the size of the moments lies beside the blob. Throws when
// the slices leave a gap, overlap or run past the end.
using MomentSlicePut = std::function<void(StateVector which, std::size_t offset, std::span<const float> values)>;
std::vector<std::byte> encode_moments(uint64_t round, std::size_t params,
                                      const std::function<void(const MomentSlicePut& put)>& read);
// A blob checked whole, not copied: its m and v sections (bf16, little-endian), borrowed from it.
struct MomentsView {
    uint64_t round = 0;
    std::size_t count = 0;
    const std::byte* m = nullptr;
    const std::byte* v = nullptr;
    float m_at(std::size_t i) const { return bf16_to_float(load_le<uint16_t>(m + 2 * i)); }
    float v_at(std::size_t i) const { return bf16_to_float(load_le<uint16_t>(v + 2 * i)); }
};
// Refuses any size but moments_bytes(params), a count other than params, a non-finite m or v, and a
// negative v (a second moment; AdamW would take its square root).
MomentsView check_moments(std::span<const std::byte> b, std::size_t params);
Moments decode_moments(std::span<const std::byte> b, std::size_t params);  // checked, then widened to fp32
uint64_t moments_round(std::span<const std::byte> b);  // the round field alone, before decoding the rest

// Why a reject or a bye was sent: a program acts on the code (a peer hellos again, or stops for
// good); the text is for people, and no program branches on it.
enum class ReasonCode : uint32_t {
    other = 0,            // no action: the text says what happened
    say_hello_first = 1,  // reject: a message before the hello; the peer hellos again
    run_full = 2,         // reject: every island slot is taken
    revoked = 3,          // bye: this key is off the allow-list; the peer stops for good
    run_finished = 4,     // bye: every round is done
    left = 5,             // bye: the sender leaves the run
};
struct Reason {
    ReasonCode code = ReasonCode::other;
    std::string text;
};
const char* reason_name(ReasonCode code);  // "run_full", ...; "other" for a code this build does not know

std::vector<std::byte> encode(const Hello& m);
std::vector<std::byte> encode(const Welcome& m);
std::vector<std::byte> encode(const RoundStart& m);
std::vector<std::byte> encode(const PseudoGradMeta& m);
std::vector<std::byte> encode(const UpdateMeta& m);
std::vector<std::byte> encode(const StateMeta& m);
std::vector<std::byte> encode(const HashReport& m);
std::vector<std::byte> encode(const DataRequest& m);
std::vector<std::byte> encode(const DataReply& m);
std::vector<std::byte> encode(const Reason& m);  // reject, bye

Hello decode_hello(std::span<const std::byte> b);
Welcome decode_welcome(std::span<const std::byte> b);
RoundStart decode_round_start(std::span<const std::byte> b);
PseudoGradMeta decode_pseudo_grad(std::span<const std::byte> b);
UpdateMeta decode_update(std::span<const std::byte> b);
StateMeta decode_state(std::span<const std::byte> b);
HashReport decode_hash_report(std::span<const std::byte> b);
DataRequest decode_data_request(std::span<const std::byte> b);
DataReply decode_data_reply(std::span<const std::byte> b);
Reason decode_reason(std::span<const std::byte> b);

}  // namespace arch::protocol
