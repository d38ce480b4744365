// net/transfer_blocking.h: run a whole transfer to completion over a socket, blocking, for tests
// and simple tools. A daemon instead feeds TransferSender/TransferReceiver from its own poll loop.
// The links returned below pass only transfer messages through and drop everything else.
#pragma once

#include <functional>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "net/host_socket.h"
#include "net/peer_socket.h"
#include "net/transfer.h"

namespace arch::net {

struct TransferMessage {
    uint16_t type = 0;
    Payload payload;  // where it was received
};

// The two things a blocking transfer needs from a connection.
struct TransferLink {
    std::function<bool(const Outbound&)> send;
    std::function<std::optional<TransferMessage>(int timeout_ms)> receive;  // nullopt on timeout
};

TransferLink link_to_host(PeerSocket& socket, uint64_t round = 0);
TransferLink link_to_peer(HostSocket& socket, const std::string& peer_key, uint64_t round = 0);

// Sends begin(), then answers the receiver until done. With no reply for retry_ms it sends begin()
// again (the receiver answers with what it holds, so nothing is sent twice on purpose). Returns
// false with `error` on abort or when timeout_ms passes.
bool send_blob(TransferSender& sender, const TransferLink& link, int timeout_ms, std::string& error,
               int retry_ms = 1000);

// Answers the sender until the blob is complete; rejected messages go to `log`. Returns the blob,
// or nullopt with `error` when timeout_ms passes.
std::optional<std::vector<std::byte>> receive_blob(TransferReceiver& receiver,
                                                 const TransferLink& link, int timeout_ms,
                                                 std::string& error,
                                                 const LogFn& log = stderr_log());

}  // namespace arch::net
