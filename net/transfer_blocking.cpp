// net/transfer_blocking.cpp: blocking loops around the transfer state machines.
#include "net/transfer_blocking.h"

#include <chrono>

#include "core/clock.h"

namespace arch::net {
namespace {

bool is_transfer_type(uint16_t type) {
    return type >= kTransferBegin && type <= kTransferAbort;
}

int ms_until(Clock::time_point t) {
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(t - Clock::real().now()).count();
    return left < 0 ? 0 : static_cast<int>(left);
}

template <typename Socket>
std::optional<TransferMessage> next_transfer_message(Socket& socket, const std::string* from,
                                                     int timeout_ms) {
    const auto deadline = Clock::real().now() + std::chrono::milliseconds(timeout_ms);
    do {
        auto in = socket.poll(ms_until(deadline));
        if (!in) return std::nullopt;
        if (in->kind != Incoming::Kind::message || !is_transfer_type(in->header.type)) continue;
        if (from != nullptr && in->peer_key != *from) continue;
        return TransferMessage{in->header.type, std::move(in->payload)};
    } while (Clock::real().now() < deadline);
    return std::nullopt;
}

}  // namespace

TransferLink link_to_host(PeerSocket& socket, uint64_t round) {
    TransferLink link;
    link.send = [&socket, round](const Outbound& m) {
        Header h;
        h.type = m.type;
        h.round = round;
        return socket.send(h, m.pieces());
    };
    link.receive = [&socket](int timeout_ms) {
        return next_transfer_message(socket, nullptr, timeout_ms);
    };
    return link;
}

TransferLink link_to_peer(HostSocket& socket, const std::string& peer_key, uint64_t round) {
    TransferLink link;
    link.send = [&socket, peer_key, round](const Outbound& m) {
        Header h;
        h.type = m.type;
        h.round = round;
        return socket.send(peer_key, h, m.pieces());
    };
    link.receive = [&socket, peer_key](int timeout_ms) {
        return next_transfer_message(socket, &peer_key, timeout_ms);
    };
    return link;
}

bool send_blob(TransferSender& sender, const TransferLink& link, int timeout_ms, std::string& error,
               int retry_ms) {
    const auto deadline = Clock::real().now() + std::chrono::milliseconds(timeout_ms);
    link.send(sender.begin());
    while (!sender.done()) {
        if (sender.failed()) {
            error = sender.error();
            return false;
        }
        if (Clock::real().now() >= deadline) {
            error = "transfer " + std::to_string(sender.transfer_id()) + " timed out after " +
                    std::to_string(timeout_ms) + " ms";
            return false;
        }
        auto m = link.receive(std::min(retry_ms, ms_until(deadline)));
        if (!m) {
            link.send(sender.begin());  // lost on a reconnect? ask the receiver where it stands
            continue;
        }
        for (const auto& reply : sender.on_message(m->type, m->payload).replies) link.send(reply);
    }
    return true;
}

std::optional<std::vector<std::byte>> receive_blob(TransferReceiver& receiver,
                                                 const TransferLink& link, int timeout_ms,
                                                 std::string& error, const LogFn& log) {
    const auto deadline = Clock::real().now() + std::chrono::milliseconds(timeout_ms);
    while (!receiver.complete()) {
        if (Clock::real().now() >= deadline) {
            error = "no complete transfer within " + std::to_string(timeout_ms) + " ms (" +
                    std::to_string(receiver.chunks_held()) + " of " +
                    std::to_string(receiver.chunk_count()) + " chunks held)";
            return std::nullopt;
        }
        auto m = link.receive(ms_until(deadline));
        if (!m) continue;
        auto step = receiver.on_message(m->type, m->payload);
        if (!step.rejected.empty() && log) log("transfer: rejected: " + step.rejected);
        for (const auto& reply : step.replies) link.send(reply);
    }
    // "done" was just queued: the socket's linger_ms delivers it even if the caller closes it now.
    return receiver.take();
}

}  // namespace arch::net
