// peers/control/control_server.cpp: the Beast HTTP server (async, one io_context, one thread) and
// a small synchronous client. Each connection reads one request at a time with a deadline, hands it
// to ControlApi::handle, writes the answer, and keeps the connection if the client asked to.
#include "peers/control/control_server.h"

#include <chrono>
#include <thread>

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

#include "core/error.h"

namespace arch {

namespace beast = boost::beast;
namespace http = beast::http;
namespace asio = boost::asio;
using tcp = asio::ip::tcp;

namespace {

constexpr auto kIdle = std::chrono::seconds(15);

class Session : public std::enable_shared_from_this<Session> {
public:
    Session(tcp::socket socket, const ControlApi& api) : stream_(std::move(socket)), api_(api) {}

    void read() {
        parser_.emplace();
        parser_->body_limit(ControlServer::kMaxBodyBytes);
        parser_->header_limit(64 * 1024);
        stream_.expires_after(kIdle);
        http::async_read(stream_, buffer_, *parser_,
                         [self = shared_from_this()](beast::error_code ec, std::size_t) { self->on_read(ec); });
    }

private:
    void on_read(beast::error_code ec) {
        if (ec == http::error::end_of_stream || ec == beast::error::timeout || ec == asio::error::operation_aborted ||
            ec == asio::error::connection_reset || ec == asio::error::eof) {
            close();
            return;
        }
        if (ec == http::error::body_limit) {
            reply(api_error(413, "the body is over 1 MiB"), 11, false);
            return;
        }
        if (ec) {
            // A malformed request: say so once, then close (the stream cannot be trusted to resync).
            reply(api_error(400, "malformed HTTP request: " + ec.message()), 11, false);
            return;
        }
        const http::request<http::string_body>& req = parser_->get();
        ApiRequest r;
        r.method = std::string(req.method_string());
        r.target = std::string(req.target());
        r.authorization = std::string(req[http::field::authorization]);
        r.body = req.body();
        reply(api_.handle(r), req.version(), req.keep_alive());
    }

    void reply(const ApiResponse& a, unsigned version, bool keep_alive) {
        res_ = {};
        res_.version(version);
        res_.result(static_cast<unsigned>(a.status));
        res_.set(http::field::server, "archipelago");
        res_.set(http::field::content_type, a.content_type);
        res_.set(http::field::cache_control, "no-store");
        for (const auto& [k, v] : a.headers) res_.set(k, v);
        res_.body() = a.body;
        res_.keep_alive(keep_alive);
        res_.prepare_payload();
        stream_.expires_after(kIdle);
        http::async_write(stream_, res_, [self = shared_from_this()](beast::error_code wec, std::size_t) {
            if (wec || !self->res_.keep_alive()) {
                self->close();
                return;
            }
            self->read();
        });
    }

    void close() {
        beast::error_code ignored;
        stream_.socket().shutdown(tcp::socket::shutdown_both, ignored);
        stream_.socket().close(ignored);
    }

    beast::tcp_stream stream_;
    beast::flat_buffer buffer_;
    std::optional<http::request_parser<http::string_body>> parser_;
    http::response<http::string_body> res_;
    const ControlApi& api_;
};

}  // namespace

struct ControlServer::Impl {
    asio::io_context ioc{1};
    tcp::acceptor acceptor{ioc};
    const ControlApi& api;
    std::thread thread;

    explicit Impl(const ControlApi& a) : api(a) {}

    void accept() {
        acceptor.async_accept([this](beast::error_code ec, tcp::socket socket) {
            if (ec == asio::error::operation_aborted) return;
            if (!ec) std::make_shared<Session>(std::move(socket), api)->read();
            accept();  // errors such as EMFILE affect one connection, never the server
        });
    }
};

ControlServer::ControlServer(const ControlApi& api, int port) : impl_(std::make_unique<Impl>(api)) {
    if (port < 0 || port > 65535) throw Error("control port must be in [0, 65535], got " + std::to_string(port));
    const tcp::endpoint endpoint(asio::ip::make_address("127.0.0.1"), static_cast<unsigned short>(port));
    beast::error_code ec;
    impl_->acceptor.open(endpoint.protocol(), ec);
    if (!ec) impl_->acceptor.set_option(asio::socket_base::reuse_address(true), ec);
    if (!ec) impl_->acceptor.bind(endpoint, ec);
    if (!ec) impl_->acceptor.listen(asio::socket_base::max_listen_connections, ec);
    if (ec) throw Error("cannot serve the control API on 127.0.0.1:" + std::to_string(port) + ": " + ec.message());
    impl_->accept();
    impl_->thread = std::thread([impl = impl_.get()] {
        for (;;) {
            try {
                impl->ioc.run();
                return;
            } catch (const std::exception&) {
                // A handler threw (it should not): keep serving.
            }
        }
    });
}

ControlServer::~ControlServer() {
    asio::post(impl_->ioc, [impl = impl_.get()] {
        beast::error_code ignored;
        impl->acceptor.close(ignored);
        impl->ioc.stop();
    });
    if (impl_->thread.joinable()) impl_->thread.join();
}

int ControlServer::port() const { return impl_->acceptor.local_endpoint().port(); }

HttpReply http_request(int port, const std::string& method, const std::string& target, const std::string& token,
                       const std::string& body, double timeout_s) {
    // Asynchronous under the hood so that one deadline covers connect, write and read.
    asio::io_context ioc;
    beast::tcp_stream stream(ioc);
    http::request<http::string_body> req(http::string_to_verb(method), target, 11);
    req.set(http::field::host, "127.0.0.1");
    if (!token.empty()) req.set(http::field::authorization, "Bearer " + token);
    if (!body.empty()) req.set(http::field::content_type, "application/json");
    req.body() = body;
    req.prepare_payload();
    beast::flat_buffer buffer;
    http::response_parser<http::string_body> parser;
    parser.body_limit(64u << 20);
    beast::error_code failed;
    bool done = false;
    stream.expires_after(std::chrono::milliseconds(static_cast<int64_t>(timeout_s * 1000)));
    const tcp::endpoint endpoint(asio::ip::make_address("127.0.0.1"), static_cast<unsigned short>(port));
    stream.async_connect(endpoint, [&](beast::error_code ec) {
        if (ec) {
            failed = ec;
            return;
        }
        http::async_write(stream, req, [&](beast::error_code wec, std::size_t) {
            if (wec) {
                failed = wec;
                return;
            }
            http::async_read(stream, buffer, parser, [&](beast::error_code rec, std::size_t) {
                failed = rec;
                done = !rec;
            });
        });
    });
    ioc.run();
    if (!done)
        throw Error("no answer from the control API on 127.0.0.1:" + std::to_string(port) + ": " + failed.message());
    HttpReply reply;
    reply.status = static_cast<int>(parser.get().result_int());
    reply.content_type = std::string(parser.get()[http::field::content_type]);
    reply.body = parser.get().body();
    beast::error_code ignored;
    stream.socket().shutdown(tcp::socket::shutdown_both, ignored);
    return reply;
}

}  // namespace arch
