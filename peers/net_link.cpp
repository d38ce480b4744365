// peers/net_link.cpp: ordered per-peer outbound queues of messages and transfers, reassembly of
// inbound transfers, and byte counts by protocol type.
#include "peers/net_link.h"

#include <sodium.h>

#include <chrono>
#include <csignal>
#include <cstdlib>
#include <cstring>

#include "core/error.h"

namespace arch {

namespace {
// Fault injection for tests (docs/protocol.md): ARCH_FAULT_KILL_AFTER_CHUNKS=N makes this process
// SIGKILL itself right after it has sent N transfer chunks, i.e. in the middle of sending a blob.
void maybe_die_mid_transfer() {
    static const long limit = [] {
        const char* v = std::getenv("ARCH_FAULT_KILL_AFTER_CHUNKS");
        return v ? std::strtol(v, nullptr, 10) : 0L;
    }();
    static long sent = 0;
    if (limit > 0 && ++sent >= limit) ::raise(SIGKILL);
}

uint64_t transfer_id_of(std::span<const uint8_t> payload) {
    uint64_t id = 0;
    if (payload.size() >= 8) std::memcpy(&id, payload.data(), 8);
    return id;
}
uint64_t new_transfer_id() {
    uint64_t id = 0;
    while (id == 0) randombytes_buf(&id, sizeof(id));
    return id;
}
}  // namespace

bool NetLink::emit(const std::string& peer, uint16_t type, uint64_t round, std::span<const uint8_t> payload,
                   protocol::Type counted_as) {
    net::Header h;
    h.type = type;
    h.round = static_cast<uint32_t>(round);
    const bool ok = send_socket(peer, h, payload);
    if (ok) sent_[static_cast<uint16_t>(counted_as)] += net::kHeaderBytes + payload.size();
    if (ok && type == net::kTransferChunk) maybe_die_mid_transfer();
    return ok;
}

void NetLink::pump(const std::string& peer) {
    auto it = out_.find(peer);
    if (it == out_.end()) return;
    std::deque<Item>& q = it->second;
    while (!q.empty()) {
        Item& item = q.front();
        if (!item.blob) {
            if (!emit(peer, static_cast<uint16_t>(item.type), item.round, item.payload, item.type)) return;
            q.pop_front();
            continue;
        }
        if (item.blob->done() || item.blob->failed()) {
            q.pop_front();
            continue;
        }
        if (!item.begun) {
            const net::Outbound b = item.blob->begin();
            if (!emit(peer, b.type, item.round, b.payload, item.type)) return;
            item.begun = true;
        }
        return;  // the transfer moves on as its status/credit messages arrive
    }
}

bool NetLink::send(const std::string& peer, protocol::Type type, uint64_t round, std::span<const std::byte> payload) {
    Item item{type, round, {}, nullptr, false};
    const auto* p = reinterpret_cast<const uint8_t*>(payload.data());
    item.payload.assign(p, p + payload.size());
    out_[peer].push_back(std::move(item));
    pump(peer);
    return true;
}

void NetLink::send_blob(const std::string& peer, protocol::Type type, uint64_t round, std::span<const std::byte> blob) {
    const auto* p = reinterpret_cast<const uint8_t*>(blob.data());
    Item item{type, round, {}, nullptr, false};
    item.blob = std::make_unique<net::TransferSender>(new_transfer_id(), std::vector<uint8_t>(p, p + blob.size()),
                                                      kChunkBytes, static_cast<uint32_t>(type));
    out_[peer].push_back(std::move(item));
    pump(peer);
}

void NetLink::forget(const std::string& peer) {
    out_.erase(peer);
    for (auto it = in_.begin(); it != in_.end();) it = it->first.first == peer ? in_.erase(it) : std::next(it);
}

std::optional<LinkEvent> NetLink::on_transfer(const net::Incoming& in) {
    const uint16_t type = in.header.type;
    const uint64_t id = transfer_id_of(in.payload);
    if (type == net::kTransferBegin || type == net::kTransferChunk ||
        (type == net::kTransferAbort && in_.count({in.peer_key, id}))) {
        auto key = std::make_pair(in.peer_key, id);
        auto found = in_.find(key);
        if (found == in_.end()) {
            if (type != net::kTransferBegin) return std::nullopt;  // a chunk of a forgotten transfer
            found = in_.emplace(key, Inbound{net::TransferReceiver(), in.header.round}).first;
        }
        Inbound& inbound = found->second;
        const net::TransferStep step = inbound.receiver.on_message(type, in.payload);
        const auto counted = static_cast<protocol::Type>(inbound.receiver.active() ? inbound.receiver.tag() : 0);
        received_[static_cast<uint16_t>(counted)] += net::kHeaderBytes + in.payload.size();
        for (const net::Outbound& reply : step.replies) emit(in.peer_key, reply.type, inbound.round, reply.payload, counted);
        if (!step.rejected.empty()) throw Error("transfer from the other side rejected: " + step.rejected);
        if (inbound.receiver.complete()) {
            LinkEvent e;
            e.peer = in.peer_key;
            e.type = counted;
            e.round = inbound.round;
            const std::vector<uint8_t> data = inbound.receiver.take();
            e.payload.resize(data.size());
            std::memcpy(e.payload.data(), data.data(), data.size());
            in_.erase(found);
            return e;
        }
        return std::nullopt;
    }
    // status / credit / done / abort for one of our outbound transfers: the head of that peer's queue.
    auto q = out_.find(in.peer_key);
    if (q == out_.end() || q->second.empty() || !q->second.front().blob ||
        q->second.front().blob->transfer_id() != id)
        return std::nullopt;  // stale (an old session or a forgotten transfer)
    Item& item = q->second.front();
    const net::TransferStep step = item.blob->on_message(type, in.payload);
    for (const net::Outbound& o : step.replies) emit(in.peer_key, o.type, item.round, o.payload, item.type);
    if (item.blob->done() || item.blob->failed()) {
        q->second.pop_front();
        pump(in.peer_key);
    }
    if (!step.rejected.empty()) throw Error("transfer message rejected: " + step.rejected);
    return std::nullopt;
}

std::optional<LinkEvent> NetLink::poll(int timeout_ms) {
    std::optional<net::Incoming> in = poll_socket(timeout_ms);
    if (!in) {
        // Retry sends that found a peer away, at most twice a second (each failure is logged).
        const auto now = std::chrono::steady_clock::now();
        if (now - last_retry_ > std::chrono::milliseconds(500)) {
            last_retry_ = now;
            for (auto& [peer, q] : out_) pump(peer);
        }
        return std::nullopt;
    }
    LinkEvent e;
    e.peer = in->peer_key;
    if (in->kind == net::Incoming::Kind::connected) {
        e.kind = LinkEvent::Kind::connected;
        // Resume: re-announce the transfer in flight; the receiver answers with what it holds.
        auto q = out_.find(in->peer_key);
        if (q != out_.end() && !q->second.empty() && q->second.front().blob) q->second.front().begun = false;
        pump(in->peer_key);
        return e;
    }
    if (in->kind == net::Incoming::Kind::disconnected) {
        e.kind = LinkEvent::Kind::disconnected;
        return e;
    }
    if (in->header.type < net::kFirstProtocolType) {
        try {
            return on_transfer(*in);
        } catch (const Error& err) {
            if (log_) log_(err.what());
            return std::nullopt;
        }
    }
    e.type = static_cast<protocol::Type>(in->header.type);
    e.round = in->header.round;
    e.payload.resize(in->payload.size());
    std::memcpy(e.payload.data(), in->payload.data(), in->payload.size());
    received_[in->header.type] += net::kHeaderBytes + in->payload.size();
    return e;
}

uint64_t NetLink::bytes_sent(protocol::Type type) const {
    auto it = sent_.find(static_cast<uint16_t>(type));
    return it == sent_.end() ? 0 : it->second;
}

uint64_t NetLink::bytes_received(protocol::Type type) const {
    auto it = received_.find(static_cast<uint16_t>(type));
    return it == received_.end() ? 0 : it->second;
}

}  // namespace arch
