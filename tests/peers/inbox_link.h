// tests/peers/inbox_link.h: a NetLink whose socket is a queue in memory, for tests and fuzz targets: poll
// takes what was pushed into `inbox`, in order; what a send does, the subclass says (send_socket).
#pragma once

#include <deque>
#include <optional>
#include <utility>

#include "peers/net_link.h"

namespace arch::test {

class InboxLink : public NetLink {
public:
    using NetLink::NetLink;
    std::deque<net::Incoming> inbox;

protected:
    std::optional<net::Incoming> poll_socket(int) override {
        if (inbox.empty()) return std::nullopt;
        net::Incoming in = std::move(inbox.front());
        inbox.pop_front();
        return in;
    }
};

}  // namespace arch::test
