// peers/control/control_server.h: carries a ControlApi over HTTP/1.1 (Boost.Beast) on 127.0.0.1
// only, on one thread of its own. Port 0 picks a free port (port() says which). Bodies over 1 MiB are
// refused with 413, malformed HTTP with 400, idle connections close after 15 s; nothing a client
// sends can stop the server. Beast stays inside the .cpp so including this header costs nothing.
#pragma once

#include <memory>
#include <string>

#include "peers/control/control_api.h"

namespace arch {

class ControlServer {
public:
    static constexpr std::size_t kMaxBodyBytes = 1u << 20;

    // Binds and starts serving; throws arch::Error if the port cannot be bound.
    ControlServer(const ControlApi& api, int port);
    ~ControlServer();  // stops and joins the thread
    ControlServer(const ControlServer&) = delete;
    ControlServer& operator=(const ControlServer&) = delete;

    int port() const;

private:
    struct Impl;
    std::unique_ptr<Impl> impl_;
};

// One request to a control API on 127.0.0.1 (for `archipelago status` and tests). Throws
// arch::Error if nothing answers within timeout_s.
struct HttpReply {
    int status = 0;
    std::string content_type;
    std::string body;
};
HttpReply http_request(int port, const std::string& method, const std::string& target, const std::string& token,
                       const std::string& body = "", double timeout_s = 10);

}  // namespace arch
