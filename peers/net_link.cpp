// peers/net_link.cpp: ordered per-peer outbound queues of messages and transfers, reassembly of
// inbound transfers, and byte counts by protocol type.
#include "peers/net_link.h"

#include <sodium.h>

#include <algorithm>
#include <chrono>
#include <cstring>

#include "core/bytes.h"
#include "core/error.h"
#include "net/keys.h"

namespace arch {

namespace {
uint64_t transfer_id_of(std::span<const std::byte> payload) {
    return payload.size() >= 8 ? load_le<uint64_t>(payload.data()) : 0;
}
uint64_t new_transfer_id() {
    uint64_t id = 0;
    while (id == 0) randombytes_buf(&id, sizeof(id));
    return id;
}
}  // namespace

bool NetLink::emit(const std::string& peer, uint16_t type, uint64_t round, net::Pieces payload,
                   protocol::Type counted_as) {
    net::Header h;
    h.type = type;
    h.round = round;
    const bool ok = send_socket(peer, h, payload);
    if (ok) {
        const std::size_t bytes = net::kHeaderBytes + net::bytes_of(payload);
        sent_[static_cast<uint16_t>(counted_as)] += bytes;
        stats_[peer].bytes_sent += bytes;
    }
    if (ok && type == net::kTransferChunk && on_chunk_sent_) on_chunk_sent_();
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
            if (item.begun_at == Clock::time_point{}) item.begun_at = Clock::real().now();
            item.begun = true;
        }
        return;  // the transfer moves on as its status/credit messages arrive
    }
}

bool NetLink::send(const std::string& peer, protocol::Type type, uint64_t round, std::span<const std::byte> payload) {
    std::deque<Item>& q = out_[peer];
    if (q.size() >= kMaxQueuedMessages) {
        if (log_)
            log_("dropped a " + std::string(protocol::type_name(type)) + " for " + net::fingerprint(peer) + ": " +
                 std::to_string(q.size()) + " messages already wait for it (it does not read)");
        return false;
    }
    Item item{type, round, {}, nullptr, nullptr, false};
    item.payload.assign(payload.begin(), payload.end());
    q.push_back(std::move(item));
    pump(peer);
    return true;
}

bool NetLink::send_blob(const std::string& peer, protocol::Type type, uint64_t round, SharedBlob blob) {
    std::deque<Item>& q = out_[peer];
    for (const Item& item : q)
        if (item.shared == blob) return true;  // already on its way
    // A state replaces an older one queued for the peer, so that a peer never pins two. (Updates
    // queued before it stay: a round_start queued after them expects the θ they lead to.)
    if (type == protocol::Type::state)
        drop_blobs(peer, q, [](const Item& item) { return item.type == protocol::Type::state; });
    const std::size_t blobs = static_cast<std::size_t>(
        std::count_if(q.begin(), q.end(), [](const Item& item) { return item.shared != nullptr; }));
    if (blobs >= kMaxQueuedBlobs || q.size() >= kMaxQueuedMessages) return false;
    Item item{type, round, {}, blob, nullptr, false};
    item.blob = std::make_unique<net::TransferSender>(new_transfer_id(), blob->pieces(), blob, kChunkBytes,
                                                      static_cast<uint32_t>(type), digest_of(blob));
    q.push_back(std::move(item));
    pump(peer);
    return true;
}

const net::Digest& NetLink::digest_of(const SharedBlob& blob) {
    std::erase_if(digests_, [](const auto& kv) { return kv.second.first.expired(); });
    auto [it, fresh] = digests_.try_emplace(blob.get());
    if (fresh) it->second = {blob, net::checksum(blob->pieces())};
    return it->second.second;
}

void NetLink::drop_blobs(const std::string& peer, std::deque<Item>& q, const std::function<bool(const Item&)>& which) {
    const bool head_dropped = !q.empty() && q.front().shared && which(q.front());
    for (auto it = q.begin(); it != q.end();) {
        if (!it->shared || !which(*it)) {
            ++it;
            continue;
        }
        if (it->begun) emit(peer, net::kTransferAbort, it->round, it->blob->abort("withdrawn by the sender").payload, it->type);
        it = q.erase(it);
    }
    if (head_dropped) pump(peer);
}

void NetLink::withdraw(const SharedBlob& blob) {
    for (auto& [peer, q] : out_) drop_blobs(peer, q, [&](const Item& item) { return item.shared == blob; });
}

void NetLink::drop_queue(const std::string& peer) {
    auto it = out_.find(peer);
    if (it == out_.end()) return;
    for (Item& item : it->second)
        if (item.blob && item.begun)
            emit(peer, net::kTransferAbort, item.round, item.blob->abort("withdrawn by the sender").payload, item.type);
    out_.erase(it);
}

void NetLink::forget(const std::string& peer) {
    out_.erase(peer);
    std::erase_if(undelivered_since_, [&](const auto& kv) { return kv.first.first == peer; });
    for (auto it = in_.begin(); it != in_.end();) it = it->first.first == peer ? in_.erase(it) : std::next(it);
}

bool NetLink::admit_begin(const net::Incoming& in, uint64_t id) {
    std::string error;
    const std::optional<net::BeginMsg> begin = net::decode_begin(in.payload, error);
    if (!begin) return true;  // the receiver rejects it with the reason
    auto refuse = [&](const std::string& reason) {
        const std::vector<std::byte> abort = net::encode(net::AbortMsg{id, reason});
        emit(in.peer_key, net::kTransferAbort, in.header.round, abort, static_cast<protocol::Type>(0));
        if (log_) log_("refused a transfer from " + net::fingerprint(in.peer_key) + ": " + reason);
        if (on_refused_) on_refused_(reason);
        return false;
    };
    const auto& done = completed_[in.peer_key];
    if (std::find(done.begin(), done.end(), id) != done.end()) {  // sent again after a reconnect
        emit(in.peer_key, net::kTransferDone, in.header.round, net::encode_done(id), static_cast<protocol::Type>(0));
        return false;
    }
    const auto type = static_cast<protocol::Type>(begin->tag);
    if (accepted_) {
        const auto limit = accepted_->find(type);
        if (limit == accepted_->end())
            return refuse("blobs of type " + std::to_string(begin->tag) + " are not taken here");
        if (begin->total_bytes > limit->second)
            return refuse(std::string(protocol::type_name(type)) + " of " + std::to_string(begin->total_bytes) +
                          " bytes declared, at most " + std::to_string(limit->second) + " in this run");
    }
    // One transfer per type in flight per peer: a new one replaces the old (the peer gave up on it).
    for (auto it = in_.begin(); it != in_.end();) {
        const bool same = it->first.first == in.peer_key && it->first.second != id &&
                          it->second.receiver.active() && it->second.receiver.tag() == begin->tag;
        it = same ? in_.erase(it) : std::next(it);
    }
    return true;
}

void NetLink::expire_stalled() {
    const auto now = Clock::real().now();
    for (auto it = in_.begin(); it != in_.end();) {
        if (now - it->second.last_progress > std::chrono::duration<double>(kStallSeconds)) {
            if (log_)
                log_("dropped a stalled transfer from " + net::fingerprint(it->first.first) + " (" +
                     std::to_string(it->second.receiver.chunks_held()) + " of " +
                     std::to_string(it->second.receiver.chunk_count()) + " chunks, nothing new for " +
                     std::to_string(static_cast<int>(kStallSeconds)) + " s)");
            undelivered_since_.erase({it->first.first, it->second.receiver.tag()});
            it = in_.erase(it);
        } else {
            ++it;
        }
    }
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
            if (!admit_begin(in, id)) return std::nullopt;
            const auto now = Clock::real().now();
            found = in_.emplace(key, Inbound{net::TransferReceiver(), in.header.round, now, now}).first;
        }
        Inbound& inbound = found->second;
        const bool was_active = inbound.receiver.active();
        const uint32_t held_before = inbound.receiver.chunks_held();
        const net::TransferStep step = inbound.receiver.on_message(type, in.payload);
        if (!was_active && inbound.receiver.active()) {  // its begin taken: the blob's time counts from the first one
            offer_spare(inbound.receiver);
            const auto [first, fresh] = undelivered_since_.try_emplace({in.peer_key, inbound.receiver.tag()}, inbound.began);
            inbound.began = first->second;
            if (fresh) stats_[in.peer_key].last_progress = inbound.began;  // a new blob starts moving; a replacement does not
        }
        if (inbound.receiver.active() && inbound.receiver.chunks_held() > held_before) {  // payload moved
            inbound.last_progress = Clock::real().now();
            if (held_before == 0) inbound.first_chunk = inbound.last_progress;
            stats_[in.peer_key].last_progress = inbound.last_progress;
        }
        const auto counted = static_cast<protocol::Type>(inbound.receiver.active() ? inbound.receiver.tag() : 0);
        received_[static_cast<uint16_t>(counted)] += net::kHeaderBytes + in.payload.size();
        stats_[in.peer_key].bytes_received += net::kHeaderBytes + in.payload.size();
        for (const net::Outbound& reply : step.replies) emit(in.peer_key, reply.type, inbound.round, reply.pieces(), counted);
        const bool gone = !inbound.receiver.active();
        if (gone) in_.erase(found);  // rejected or aborted: hold nothing for it
        if (!step.rejected.empty()) throw Error("transfer from the other side rejected: " + step.rejected);
        if (!gone && inbound.receiver.complete()) {
            LinkEvent e;
            e.peer = in.peer_key;
            e.type = counted;
            e.round = inbound.round;
            e.payload = inbound.receiver.take();
            const std::size_t size = e.payload.size();
            // From its first chunk, not its begin: a begin may go out long before its chunks, the first
            // chunk (bytes of the blob, checked against its digest) only once the blob exists. The time
            // before it is not time on the wire (docs/net.md).
            const Clock::time_point first = inbound.first_chunk == Clock::time_point{} ? inbound.last_progress : inbound.first_chunk;
            e.transfer_seconds = std::chrono::duration<double>(inbound.last_progress - first).count();
            e.since_begin_seconds = std::chrono::duration<double>(inbound.last_progress - inbound.began).count();
            measure(stats_[in.peer_key].receive_bytes_per_s, size, e.transfer_seconds);
            undelivered_since_.erase({in.peer_key, static_cast<uint32_t>(counted)});
            in_.erase(found);
            std::deque<uint64_t>& done = completed_[in.peer_key];
            done.push_back(id);
            if (done.size() > kRememberedTransfers) done.pop_front();
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
    LinkStats& st = stats_[in.peer_key];
    st.bytes_received += net::kHeaderBytes + in.payload.size();
    const uint64_t credited_before = item.blob->credits_received();
    const net::TransferStep step = item.blob->on_message(type, in.payload);
    if (item.blob->credits_received() > credited_before || item.blob->done()) st.last_progress = Clock::real().now();
    for (const net::Outbound& o : step.replies) emit(in.peer_key, o.type, item.round, o.pieces(), item.type);
    if (item.blob->done())
        measure(st.send_bytes_per_s, item.shared->size(), std::chrono::duration<double>(st.last_progress - item.begun_at).count());
    if (item.blob->done() || item.blob->failed()) {
        q->second.pop_front();
        pump(in.peer_key);
    }
    if (!step.rejected.empty()) throw Error("transfer message rejected: " + step.rejected);
    return std::nullopt;
}

std::optional<LinkEvent> NetLink::poll(int timeout_ms) {
    // A transfer's chunks and credits are handled here and return nothing; while more of them wait,
    // they are handled in the same call (up to kDrainMessages, for at most kDrainTime), so that the
    // caller's own work between two calls (a checkpoint's staging) comes once per batch, not once
    // per chunk, and still comes while chunks keep arriving.
    bool read = false;
    const Clock::time_point until = Clock::real().now() + kDrainTime;
    for (std::size_t i = 0; i < kDrainMessages; ++i) {
        std::optional<LinkEvent> e = poll_once(i == 0 ? timeout_ms : 0, read);
        if (e || !read || Clock::real().now() > until) return e;
    }
    return std::nullopt;
}

std::optional<LinkEvent> NetLink::poll_once(int timeout_ms, bool& read) {
    std::optional<net::Incoming> in = poll_socket(timeout_ms);
    read = in.has_value();
    if (!in) {
        // Retry sends that found a peer away, at most twice a second (each failure is logged).
        const auto now = Clock::real().now();
        if (now - last_retry_ > std::chrono::milliseconds(500)) {
            last_retry_ = now;
            for (auto& [peer, q] : out_) pump(peer);
            expire_stalled();
        }
        return std::nullopt;
    }
    LinkEvent e;
    e.peer = in->peer_key;
    if (in->kind == net::Incoming::Kind::connected) {
        e.kind = LinkEvent::Kind::connected;
        if (!in->to.empty()) {
            stats_[in->peer_key].came_from = in->from;
            stats_[in->peer_key].came_in_on = in->to;
        }
        // Resume: re-announce the transfer in flight; the receiver answers with what it holds.
        auto q = out_.find(in->peer_key);
        if (q != out_.end() && !q->second.empty() && q->second.front().blob) q->second.front().begun = false;
        pump(in->peer_key);
        return e;
    }
    if (in->kind == net::Incoming::Kind::disconnected || in->kind == net::Incoming::Kind::refused) {
        e.kind = in->kind == net::Incoming::Kind::refused ? LinkEvent::Kind::refused : LinkEvent::Kind::disconnected;
        return e;
    }
    if (in->header.type < net::kFirstProtocolType) {
        // A begin costs the receiver its bookkeeping before anything arrives: it is charged first.
        const bool begin = in->header.type == net::kTransferBegin;
        if (begin && charge_ && !charge_(in->peer_key)) return std::nullopt;
        try {
            return on_transfer(*in);
        } catch (const std::exception& err) {  // arch::Error, and bad_alloc & co: the message is dropped, nothing else
            // A refused message is charged too, so that a flood of them is cut, and logged by the budget.
            if (log_ && (begin || !charge_ || charge_(in->peer_key))) log_(err.what());
            return std::nullopt;
        }
    }
    e.type = static_cast<protocol::Type>(in->header.type);
    e.round = in->header.round;
    received_[in->header.type] += net::kHeaderBytes + in->payload.size();
    stats_[in->peer_key].bytes_received += net::kHeaderBytes + in->payload.size();
    e.payload = in->payload.take();
    return e;
}

void NetLink::give_back(std::vector<std::byte>&& blob) {
    if (blob.capacity() < kSmallestSpare) return;
    spare_.push_back(std::move(blob));
    if (spare_.size() <= kSpareBlobs) return;
    const auto smallest = std::min_element(spare_.begin(), spare_.end(),
                                           [](const auto& a, const auto& b) { return a.capacity() < b.capacity(); });
    spare_.erase(smallest);
}

void NetLink::offer_spare(net::TransferReceiver& receiver) {
    // Not for a small blob, nor memory more than twice the blob's: it would stay with the blob.
    const uint64_t need = receiver.total_bytes();
    if (need < kSmallestSpare) return;
    auto best = spare_.end();
    for (auto it = spare_.begin(); it != spare_.end(); ++it)
        if (it->capacity() >= need && it->capacity() <= 2 * need && (best == spare_.end() || it->capacity() < best->capacity()))
            best = it;
    if (best != spare_.end()) {
        if (receiver.use_memory(*best)) spare_.erase(best);
        return;
    }
    // None holds it. Blobs of a kind vary in size a little, and one past a spare's room would leave
    // that spare unused for good: those short of it by less than half go. A much smaller one is of
    // another kind (a plain update beside one that carries DES-LOC's moments), and stays.
    std::erase_if(spare_, [&](const std::vector<std::byte>& b) { return b.capacity() < need && 2 * b.capacity() >= need; });
}

void NetLink::measure(double& rate, uint64_t bytes, double seconds) {
    // Only blobs of a few chunks say much about the link (a small one is mostly latency).
    if (bytes < 4 * static_cast<uint64_t>(kChunkBytes) || seconds <= 0) return;
    const double r = static_cast<double>(bytes) / seconds;
    rate = rate > 0 ? 0.5 * rate + 0.5 * r : r;
}

LinkStats NetLink::stats(const std::string& peer) const {
    auto it = stats_.find(peer);
    LinkStats s = it == stats_.end() ? LinkStats{} : it->second;
    auto q = out_.find(peer);
    if (q != out_.end() && !q->second.empty() && q->second.front().blob && q->second.front().begun) {
        s.sending = q->second.front().shared->size();
        s.sent = q->second.front().blob->bytes_acknowledged();
        s.sending_since = q->second.front().begun_at;
    }
    for (const auto& [key, inbound] : in_)
        if (key.first == peer && inbound.receiver.active() && inbound.receiver.total_bytes() >= s.receiving) {
            s.receiving = inbound.receiver.total_bytes();
            s.received = inbound.receiver.bytes_held();
            s.receiving_since = inbound.began;
        }
    return s;
}

uint64_t NetLink::inbound_bytes_held() const {
    uint64_t bytes = 0;
    for (const auto& [key, inbound] : in_) bytes += inbound.receiver.data().size();
    return bytes;
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
