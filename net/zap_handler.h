// net/zap_handler.h (internal to net/): the ZAP (RFC 27) handler a HostSocket runs on its own
// thread. It binds inproc://zeromq.zap.01 in the constructor, so it exists before the host socket
// binds; it answers 200 only for CURVE clients of the right domain whose key is on the allow-list,
// and 400 for everything else (fail closed). Refusals are queued as log lines for the owner to
// drain.
#pragma once

#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>
#include <zmq.hpp>

#include "net/allow_list.h"

namespace arch::net::detail {

class ZapHandler {
  public:
    ZapHandler(zmq::context_t& context, std::string domain, AllowList allow);
    ~ZapHandler();  // the owner must shut the context down first so the thread's recv returns
    ZapHandler(const ZapHandler&) = delete;
    ZapHandler& operator=(const ZapHandler&) = delete;

    void set_allow_list(AllowList allow);  // thread-safe; applies to the next handshake
    std::shared_ptr<const AllowList> allow_list() const;
    // The refusals' lines since the last call, and how many more a full queue left out. Thread-safe.
    std::vector<std::string> take_log(uint64_t& left_out);

  private:
    void run();
    void handle(const std::vector<zmq::message_t>& request);
    void log(std::string line);

    zmq::socket_t socket_;
    std::string domain_;
    mutable std::mutex mutex_;
    std::shared_ptr<const AllowList> allow_;
    std::vector<std::string> log_;
    uint64_t left_out_ = 0;
    std::thread thread_;
};

}  // namespace arch::net::detail
