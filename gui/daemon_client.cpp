// gui/daemon_client.cpp: DaemonClient. Requests go to http://127.0.0.1:PORT with
// "Authorization: Bearer TOKEN" and a transfer timeout, so a hung daemon reads as unreachable
// instead of piling up requests: a new poll round starts only when the last one has finished.
#include "gui/daemon_client.h"

#include <QFile>
#include <QJsonDocument>
#include <QNetworkReply>

namespace arch::gui {

DaemonClient::DaemonClient(quint16 port, QString token_file, QObject* parent)
    : QObject(parent), port_(port), token_file_(std::move(token_file)) {
    reload_token();
    connect(&timer_, &QTimer::timeout, this, &DaemonClient::poll_now);
}

void DaemonClient::reload_token() {
    QFile f(token_file_);
    token_ = f.open(QIODevice::ReadOnly) ? f.readAll().trimmed() : QByteArray();
}

void DaemonClient::start_polling(int interval_ms) {
    timer_.start(interval_ms);
    poll_now();
}

void DaemonClient::stop_polling() {
    timer_.stop();
}

void DaemonClient::poll_now() {
    if (in_flight_ > 0) return;
    if (token_.isEmpty()) reload_token();
    get("/api/status");
    get("/api/peers");
    get("/api/rounds");
    get(QString("/api/log?lines=%1").arg(log_lines));
}

QNetworkRequest DaemonClient::request(const QString& path_and_query) {
    QNetworkRequest req(QUrl(QString("http://127.0.0.1:%1%2").arg(port_).arg(path_and_query)));
    req.setRawHeader("Authorization", "Bearer " + token_);
    req.setTransferTimeout(timeout_ms_);
    return req;
}

void DaemonClient::get(const QString& path_and_query) {
    ++in_flight_;
    QNetworkReply* reply = net_.get(request(path_and_query));
    const QString path = path_and_query.section('?', 0, 0);
    connect(reply, &QNetworkReply::finished, this, [this, reply, path] {
        --in_flight_;
        on_get_finished(reply, path);
        reply->deleteLater();
    });
}

void DaemonClient::set_link(Link link, const QString& reason) {
    if (link == link_ && reason == link_reason_) return;
    link_ = link;
    link_reason_ = reason;
    emit link_changed(link, reason);
}

bool DaemonClient::check_link(QNetworkReply* reply) {
    const int http = reply->attribute(QNetworkRequest::HttpStatusCodeAttribute).toInt();
    if (http == 0) {  // no HTTP answer at all: refused, reset, timed out
        const QString why = reply->error() == QNetworkReply::OperationCanceledError
                                ? QString("no answer within %1 ms").arg(timeout_ms_)
                                : reply->errorString();
        set_link(Link::Unreachable,
                 QString("daemon not reachable on 127.0.0.1:%1 (%2)").arg(port_).arg(why));
        return false;
    }
    if (http == 401 || http == 403) {
        reload_token();  // a daemon that just started may have written a new token
        set_link(Link::Unauthorized, QString("the daemon on 127.0.0.1:%1 refused the token in %2")
                                         .arg(port_)
                                         .arg(token_file_));
        return false;
    }
    set_link(Link::Reachable, QString("daemon on 127.0.0.1:%1").arg(port_));
    return true;
}

void DaemonClient::on_get_finished(QNetworkReply* reply, const QString& path) {
    if (!check_link(reply)) return;
    if (reply->error() != QNetworkReply::NoError)
        return;  // 404 of a missing endpoint, 500...: skip
    const QByteArray body = reply->readAll();
    if (path == "/api/status") {
        if (auto s = parse_status(body)) emit status_received(*s);
    } else if (path == "/api/peers") {
        if (auto p = parse_peers(body)) emit peers_received(*p);
    } else if (path == "/api/rounds") {
        if (auto r = parse_rounds(body)) emit rounds_received(*r);
    } else if (path == "/api/log") {
        if (auto l = parse_log(body)) emit log_received(*l);
    }
}

void DaemonClient::post(const QString& path, const QJsonObject& body) {
    if (token_.isEmpty()) reload_token();
    QNetworkRequest req = request(path);
    req.setHeader(QNetworkRequest::ContentTypeHeader, "application/json");
    req.setTransferTimeout(30000);  // /api/host may prepare the corpus before it answers
    QNetworkReply* reply = net_.post(req, QJsonDocument(body).toJson(QJsonDocument::Compact));
    connect(reply, &QNetworkReply::finished, this, [this, reply, path] {
        reply->deleteLater();
        const bool answered = check_link(reply);
        const QByteArray text = reply->readAll();
        if (!answered) {
            emit command_finished(path, false, link_reason_);
        } else if (reply->error() != QNetworkReply::NoError) {
            const QString msg = parse_error(text);
            const int http = reply->attribute(QNetworkRequest::HttpStatusCodeAttribute).toInt();
            emit command_finished(
                path, false, msg.isEmpty() ? QString("HTTP %1 from %2").arg(http).arg(path) : msg);
        } else {
            if (path == "/api/invite") {
                const QJsonObject answer = QJsonDocument::fromJson(text).object();
                emit invite_received(answer.value("name").toString(), answer.value("invite").toString());
            }
            emit command_finished(path, true, QString());
        }
        poll_now();
    });
}

void DaemonClient::host(const QString& run_toml) {
    post("/api/host", QJsonObject{{"config", run_toml}});
}

void DaemonClient::join(const QString& invite_text, const QString& key_path) {
    post("/api/join", QJsonObject{{"invite", invite_text}, {"key", key_path}});
}

void DaemonClient::leave() {
    post("/api/leave", QJsonObject{});
}
void DaemonClient::pause() {
    post("/api/pause", QJsonObject{});
}
void DaemonClient::invite(const QString& name, const QString& public_key) {
    post("/api/invite", QJsonObject{{"name", name}, {"public_key", public_key}});
}
void DaemonClient::revoke(const QString& name) {
    post("/api/revoke", QJsonObject{{"name", name}});
}
void DaemonClient::resume() {
    post("/api/resume", QJsonObject{});
}

}  // namespace arch::gui
