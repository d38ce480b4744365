// net/zap_handler.cpp: ZAP request parsing and the allow-list decision.
#include "net/zap_handler.h"

#include <utility>

#include "net/keys.h"
#include "net/zmq_common.h"

namespace arch::net::detail {

ZapHandler::ZapHandler(zmq::context_t& context, std::string domain, AllowList allow)
    : socket_(context, zmq::socket_type::rep),
      domain_(std::move(domain)),
      allow_(std::make_shared<const AllowList>(std::move(allow))) {
    set_int(socket_, ZMQ_LINGER, 0, "ZMQ_LINGER");
    socket_.bind("inproc://zeromq.zap.01");  // throws (EADDRINUSE) if this context already has one
    thread_ = std::thread([this] { run(); });
}

ZapHandler::~ZapHandler() {
    if (thread_.joinable()) thread_.join();
}

void ZapHandler::set_allow_list(AllowList allow) {
    auto fresh = std::make_shared<const AllowList>(std::move(allow));
    std::lock_guard<std::mutex> lock(mutex_);
    allow_ = std::move(fresh);
}

std::shared_ptr<const AllowList> ZapHandler::allow_list() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return allow_;
}

std::vector<std::string> ZapHandler::take_log(uint64_t& left_out) {
    std::lock_guard<std::mutex> lock(mutex_);
    left_out = std::exchange(left_out_, 0);
    return std::exchange(log_, {});
}

void ZapHandler::log(std::string line) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (log_.size() < 1000) log_.push_back(std::move(line));  // a flood of refusals must not grow memory
    else ++left_out_;
}

void ZapHandler::run() {
    block_signals_in_this_thread();
    try {
        for (;;) {
            std::vector<zmq::message_t> request;
            do {
                request.emplace_back();
                if (!socket_.recv(request.back())) return;
            } while (request.back().more() && request.size() < 16);
            while (request.back().more()) {  // drain an oversized request; it is refused below
                zmq::message_t rest;
                if (!socket_.recv(rest)) return;
                if (!rest.more()) break;
            }
            handle(request);
        }
    } catch (const zmq::error_t&) {
        // ETERM: the context is shutting down.
    }
    socket_.close();
}

void ZapHandler::handle(const std::vector<zmq::message_t>& request) {
    // RFC 27 request: version, request id, domain, address, routing id, mechanism, credentials...
    auto frame = [&](std::size_t i) {
        return i < request.size() ? request[i].to_string() : std::string();
    };
    std::string status = "400", text, user_id;
    const std::string address = frame(3);
    if (request.size() < 6 || frame(0) != "1.0") {
        text = "malformed ZAP request";
    } else if (frame(2) != domain_) {
        text = "wrong ZAP domain '" + frame(2) + "'";
    } else if (frame(5) != "CURVE" || request.size() != 7 || request[6].size() != 32) {
        text = "mechanism " + frame(5) + " is not allowed (CURVE only)";
    } else {
        char z85[41];
        zmq_z85_encode(z85, static_cast<const uint8_t*>(request[6].data()), 32);
        const auto allow = allow_list();
        if (allow->contains(z85)) {
            status = "200";
            text = "OK";
            user_id = z85;
        } else {
            text = "key " + fingerprint(z85) + " (" + z85 + ") is not on the allow-list";
        }
    }
    if (status != "200") log("host: refused a connection from " + address + ": " + text);
    const std::string request_id = frame(1);
    socket_.send(zmq::buffer(std::string("1.0")), zmq::send_flags::sndmore);
    socket_.send(zmq::buffer(request_id), zmq::send_flags::sndmore);
    socket_.send(zmq::buffer(status), zmq::send_flags::sndmore);
    socket_.send(zmq::buffer(text), zmq::send_flags::sndmore);
    socket_.send(zmq::buffer(user_id), zmq::send_flags::sndmore);
    socket_.send(zmq::message_t(), zmq::send_flags::none);
}

}  // namespace arch::net::detail
