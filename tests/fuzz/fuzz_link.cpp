// tests/fuzz/fuzz_link.cpp: libFuzzer target for the host's side of the link (peers/net_link.cpp over
// net/transfer.cpp): three authenticated peers send transfer-begin, chunk, status, credit, done and
// abort messages, raw frames and protocol messages, in any order and with fuzzed fields, while the
// host sends each of them a state of two chunks and drops, withdraws or forgets what it queued. fuzz_host
// drives the Host itself over a scripted Link; this target is where the transfer messages meet the
// real NetLink. Aborts when poll() throws, when what the peers sent buys the host more than
// docs/protocol.md allows ("What a message may cost"), or when a blob is delivered that is not the one
// its sender declared.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "net/message.h"
#include "net/transfer.h"
#include "net/transfer_wire.h"
#include "peers/net_link.h"
#include "tests/peers/inbox_link.h"
#include "tests/fuzz/host_steps.h"

namespace {

using arch::net::Incoming;
using fuzz_host::Bytes;

constexpr int kPeers = 3;
const std::string kKeys[kPeers] = {std::string(32, 'a'), std::string(32, 'b'), std::string(32, 'c')};
constexpr uint64_t kPseudoGradLimit = 1u << 20;  // what the host takes: pseudo-gradients of at most 1 MiB
constexpr uint64_t kStateChunks = 2;             // the state the host sends each peer: 1 MiB and 1 KiB
constexpr uint32_t kAhead = 8 + 16;              // chunks a receiver may hold past the furthest one (window + resends)

[[noreturn]] void fail(const std::string& what) {
    std::fprintf(stderr, "fuzz_link: %s\n", what.c_str());
    std::abort();
}

// The bytes [from, from + n) of the blob a peer means by `id`: they follow from both, so a delivered
// blob can be checked, and a chunk is made without the whole blob.
std::vector<std::byte> pattern(uint64_t id, uint64_t n, uint64_t from = 0) {
    std::vector<std::byte> b(n);
    for (uint64_t i = 0; i < n; ++i) b[i] = static_cast<std::byte>(((from + i) * 131 + id * 7) & 0xff);
    return b;
}

// NetLink over a scripted socket: what the peers send is queued by the input; what the host sends is
// counted (its transfer chunks above all).
class ScriptedLink final : public arch::test::InboxLink {
public:
    ScriptedLink() : InboxLink([](const std::string&) {}) {}
    std::map<std::string, uint64_t> chunks_sent, begins_sent;  // per peer
    std::map<std::string, uint64_t> last_begin_id;             // the host's transfer under way to each

private:
    bool send_socket(const std::string& peer, const arch::net::Header& h, arch::net::Pieces p) override {
        if (h.type == arch::net::kTransferChunk) ++chunks_sent[peer];
        if (h.type == arch::net::kTransferBegin) {
            ++begins_sent[peer];
            std::string error;
            if (const auto b = arch::net::decode_begin(p.empty() ? std::span<const std::byte>() : p[0], error))
                last_begin_id[peer] = b->id;
        }
        return true;
    }
};

struct PeerTally {  // what one peer sent the host
    uint64_t statuses = 0, credits = 0, chunk_bytes = 0;  // statuses: for the message only
};

Incoming message(int peer, uint16_t type, std::vector<std::byte> payload, uint64_t round = 0) {
    Incoming in;
    in.kind = Incoming::Kind::message;
    in.peer_key = kKeys[peer];
    in.header.type = type;
    in.header.round = round;
    in.payload = std::move(payload);
    return in;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
    Bytes in(data, size);
    ScriptedLink link;
    link.accept_blobs({{arch::protocol::Type::pseudo_grad, kPseudoGradLimit}});
    std::map<std::string, int> charged;
    link.charge_transfers([&](const std::string& peer) { return ++charged[peer] <= 200; });  // the host's budget, by count
    static const auto state = arch::share_blob(pattern(99, (1u << 20) + 1024));  // kStateChunks
    for (int p = 0; p < kPeers; ++p) link.send_blob(kKeys[p], arch::protocol::Type::state, 0, state);
    PeerTally tally[kPeers];
    // Every (peer, id, size) a begin with the right digest declared: an id declared again with another
    // size is refused while the first is under way, so either may be what arrives.
    std::set<std::tuple<int, uint64_t, uint64_t>> declared;
    std::map<std::pair<int, uint64_t>, uint64_t> latest;  // (peer, id) -> the last size declared, for chunks

    for (int step = 0; step < 400 && !in.empty(); ++step) {
        const uint8_t op = in.u8();
        const int peer = (op & 3) % kPeers;
        PeerTally& t = tally[peer];
        const uint64_t out_id = link.last_begin_id[kKeys[peer]];
        switch ((op >> 2) % 10) {
            case 0: {  // a begin: a pseudo-gradient with its true digest, or fuzzed fields
                // Every read in its own statement: the order of the input's bytes is the order written here.
                const uint64_t id = 1 + in.u8() % 8;
                const uint64_t hi = in.u8(), lo = in.u8();
                const uint64_t bytes = (hi << 12 | lo) * (in.u8() % 4 + 1);
                uint32_t chunk = 0;
                if (in.u8() % 2) {
                    chunk = 1024u << (in.u8() % 4);
                } else {
                    const uint32_t high = in.u8(), low = in.u8();
                    chunk = (high << 8 | low) + 1;
                }
                arch::net::BeginMsg b{id, bytes, chunk, static_cast<uint32_t>((bytes + chunk - 1) / chunk),
                                      static_cast<uint32_t>(arch::protocol::Type::pseudo_grad), {}};
                const uint8_t how = in.u8();
                if (how % 4 == 0) b.chunk_count += in.u8();
                if (how % 5 == 0) b.tag = in.u8();
                if (how % 3 != 0) {
                    b.digest = arch::net::checksum(pattern(id, bytes));
                    declared.insert({peer, id, bytes});
                    latest[{peer, id}] = bytes;
                }
                link.inbox.push_back(message(peer, arch::net::kTransferBegin, arch::net::encode(b)));
                break;
            }
            case 1: {  // a chunk of the blob it declared, right or mangled, or anywhere
                const uint64_t id = 1 + in.u8() % 8;
                const uint32_t chunk = 1024u << (in.u8() % 4);
                const uint32_t index = in.u8();
                const uint64_t total = latest.count({peer, id}) ? latest[{peer, id}] : uint64_t{chunk} * 4;
                const uint64_t offset = std::min<uint64_t>(uint64_t{index} * chunk, total);
                std::vector<std::byte> bytes = pattern(id, std::min<uint64_t>(chunk, total - offset), offset);
                if (in.u8() % 7 == 0 && !bytes.empty()) bytes[in.u8() % bytes.size()] ^= std::byte{1};
                t.chunk_bytes += bytes.size();
                const uint32_t session = in.u8() % 4;
                link.inbox.push_back(message(peer, arch::net::kTransferChunk, arch::net::encode_chunk(id, session, index, bytes)));
                break;
            }
            case 2: {  // a status for the host's state transfer (or another id)
                const uint64_t id = in.u8() % 4 ? out_id : in.u8();
                std::vector<bool> held(in.u8() % 5);
                for (std::size_t i = 0; i < held.size(); ++i) held[i] = in.u8() % 2;
                ++t.statuses;
                link.inbox.push_back(message(peer, arch::net::kTransferStatus,
                                             arch::net::encode(arch::net::StatusMsg{id, in.u8() % 4u, uint32_t{in.u8()} << (in.u8() % 24), held})));
                break;
            }
            case 3: {  // a credit: any grant, any resend
                const uint64_t id = in.u8() % 4 ? out_id : in.u8();
                ++t.credits;
                link.inbox.push_back(message(peer, arch::net::kTransferCredit,
                                             arch::net::encode(arch::net::CreditMsg{id, in.u8() % 4u, uint32_t{in.u8()} << (in.u8() % 24),
                                                                                    in.u8() % 2 ? arch::net::kNoResend : in.u8() % 4u})));
                break;
            }
            case 4:
                link.inbox.push_back(message(peer, arch::net::kTransferDone, arch::net::encode_done(in.u8() % 2 ? out_id : 1 + in.u8() % 8)));
                break;
            case 5:
                link.inbox.push_back(message(peer, arch::net::kTransferAbort,
                                             arch::net::encode(arch::net::AbortMsg{in.u8() % 2 ? out_id : 1 + in.u8() % 8, "fuzz"})));
                break;
            case 6: {  // raw bytes under any transfer type, or a protocol message
                const uint16_t type = static_cast<uint16_t>(in.u8() % 12);
                const std::string s = in.str(64);
                link.inbox.push_back(message(peer, type, std::vector<std::byte>(reinterpret_cast<const std::byte*>(s.data()),
                                                                                reinterpret_cast<const std::byte*>(s.data()) + s.size())));
                break;
            }
            case 7: {  // the peer's connection comes back (the host re-announces what it sends) or drops
                Incoming e;
                e.kind = in.u8() % 2 ? Incoming::Kind::connected : Incoming::Kind::disconnected;
                e.peer_key = kKeys[peer];
                link.inbox.push_back(std::move(e));
                break;
            }
            case 8:  // the host changes its mind about what it sends
                switch (in.u8() % 4) {
                    case 0: link.send_blob(kKeys[peer], arch::protocol::Type::state, 0, state); break;
                    case 1: link.drop_queue(kKeys[peer]); break;
                    case 2: link.forget(kKeys[peer]); break;
                    default: link.withdraw(state);
                }
                break;
            default:  // the host reads what came
                break;
        }
        while (!link.inbox.empty()) {
            std::optional<arch::LinkEvent> e;
            try {
                e = link.poll(0);
            } catch (const std::exception& err) {
                fail(std::string("poll threw: ") + err.what());
            }
            if (!e || e->kind != arch::LinkEvent::Kind::message || e->type != arch::protocol::Type::pseudo_grad) continue;
            int from = 0;
            while (from < kPeers && kKeys[from] != e->peer) ++from;
            bool known = false;
            for (const auto& [who, id, bytes] : declared)
                if (who == from && bytes == e->payload.size() && pattern(id, bytes) == e->payload) known = true;
            if (!known) fail("a blob of " + std::to_string(e->payload.size()) + " bytes was delivered that peer " + std::to_string(from) + " never declared");
            if (e->payload.size() > kPseudoGradLimit) fail("a blob over the accepted size was delivered");
        }
        // What the peers bought: memory for their transfers, chunks of the host's.
        uint64_t chunk_bytes = 0;
        for (const PeerTally& p : tally) chunk_bytes += p.chunk_bytes;
        // Each transfer: the bytes it holds, and the window and resends beyond them, in chunks of at
        // most 64 KiB (the largest this input can declare).
        const uint64_t allowed = chunk_bytes + link.inbound_transfers() * uint64_t{kAhead + 1} * 65536;
        if (link.inbound_transfers() > kPeers) fail(std::to_string(link.inbound_transfers()) + " inbound transfers for " + std::to_string(kPeers) + " peers");
        if (link.inbound_bytes_held() > allowed)
            fail("inbound transfers hold " + std::to_string(link.inbound_bytes_held()) + " bytes for " + std::to_string(chunk_bytes) +
                 " bytes of chunks received");
        for (int p = 0; p < kPeers; ++p) {
            const uint64_t sent = link.chunks_sent[kKeys[p]];
            // A status is taken once per begin the host sent, for a window of at most the blob's chunks;
            // a credit buys one chunk.
            const uint64_t window = std::min<uint64_t>(arch::net::TransferSender::kMaxWindowChunks, kStateChunks);
            const uint64_t bought = window * link.begins_sent[kKeys[p]] + tally[p].credits;
            if (sent > bought)
                fail("peer " + std::to_string(p) + " got " + std::to_string(sent) + " chunks for " + std::to_string(link.begins_sent[kKeys[p]]) +
                     " begins of the host's, " + std::to_string(tally[p].statuses) + " statuses and " + std::to_string(tally[p].credits) + " credits");
        }
    }
    return 0;
}
