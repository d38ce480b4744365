// tests/gui/fake_daemon.cpp: FakeDaemon's tiny HTTP/1.1: one request per connection, read until
// the headers end and Content-Length bytes of body, answer with Connection: close. Enough for
// QNetworkAccessManager; not a web server.
#include "tests/gui/fake_daemon.h"

#include <QJsonDocument>
#include <QJsonObject>
#include <QTcpSocket>

namespace arch::gui::test {

FakeDaemon::FakeDaemon(QByteArray token, QObject* parent)
    : QObject(parent), token_(std::move(token)) {
    replies["/api/status"] = canned_status();
    replies["/api/peers"] = canned_peers();
    replies["/api/rounds"] = canned_rounds();
    replies["/api/log"] = R"({"lines":["round 2 done","round 3 done"]})";
    connect(&server_, &QTcpServer::newConnection, this, [this] {
        while (QTcpSocket* s = server_.nextPendingConnection()) {
            s->setParent(this);
            connect(s, &QTcpSocket::readyRead, this, [this, s] { serve(s); });
            connect(s, &QTcpSocket::disconnected, s, &QObject::deleteLater);
        }
    });
}

bool FakeDaemon::listen(quint16 port) {
    return server_.listen(QHostAddress::LocalHost, port);
}

void FakeDaemon::stop() {
    server_.close();
    for (QTcpSocket* s : findChildren<QTcpSocket*>()) s->abort();
}

QList<FakeRequest> FakeDaemon::posts() const {
    QList<FakeRequest> out;
    for (const FakeRequest& r : requests)
        if (r.method == "POST") out.append(r);
    return out;
}

void FakeDaemon::serve(QTcpSocket* s) {
    QByteArray buf = s->property("buf").toByteArray() + s->readAll();
    s->setProperty("buf", buf);
    const qsizetype end = buf.indexOf("\r\n\r\n");
    if (end < 0) return;
    const QList<QByteArray> lines = buf.left(end).split('\n');
    FakeRequest r;
    const QList<QByteArray> first = lines.value(0).trimmed().split(' ');
    r.method = first.value(0);
    r.path = first.value(1).split('?').value(0);
    qsizetype length = 0;
    for (const QByteArray& line : lines.mid(1)) {
        const qsizetype colon = line.indexOf(':');
        const QByteArray key = line.left(colon).trimmed().toLower(),
                         value = line.mid(colon + 1).trimmed();
        if (key == "content-length") length = value.toLongLong();
        if (key == "authorization") r.authorization = value;
    }
    if (buf.size() < end + 4 + length) return;  // body still arriving
    r.body = buf.mid(end + 4, length);
    s->setProperty("buf", QByteArray());
    requests.append(r);
    emit request_received(r);

    int code = 200;
    QByteArray body;
    if (r.authorization != "Bearer " + token_) {
        code = 401, body = R"({"error":"missing or wrong bearer token"})";
    } else if (r.method == "POST") {
        if (post_error.isEmpty())
            body = replies.value(r.path, R"({"ok":true})");
        else
            code = 400, body = QJsonDocument(QJsonObject{{"error", QString::fromUtf8(post_error)}}).toJson(QJsonDocument::Compact);
    } else if (replies.contains(r.path)) {
        body = replies[r.path];
    } else {
        code = 404, body = R"({"error":"no such endpoint"})";
    }
    const QByteArray reason = code == 200   ? "OK"
                              : code == 401 ? "Unauthorized"
                              : code == 400 ? "Bad Request"
                                            : "Not Found";
    s->write("HTTP/1.1 " + QByteArray::number(code) + " " + reason +
             "\r\nContent-Type: application/json\r\n" + "Content-Length: " +
             QByteArray::number(body.size()) + "\r\nConnection: close\r\n\r\n" + body);
    s->disconnectFromHost();
}

QByteArray canned_status() {
    return R"({"role":"host","run":"kjv-demo","state":"training","round":3,"rounds":10,"mode":"sync",)"
           R"("islands":2,"theta_hash":"9f3a5c","paused":false,"tokens_per_s":5120.5,"uptime_s":42,"extra":1,)"
           R"("steps_per_round":117,"steps_why":"auto: a sync 11.40 s, a step 0.093 s; 95% busy overlapped",)"
           R"("reachability":"mapped","external_endpoint":"tcp://203.0.113.7:5555","reachability_detail":"UPnP IGD mapped",)"
           R"("privacy":{"mode":"central","clip":1.0,"noise_multiplier":4.03,"delta":1e-05,"epsilon_budget":8.0,)"
           R"("epsilon_spent":2.5,"honest":0,"updates_affordable":40}})";
}

QByteArray canned_peers() {
    return R"({"peers":[{"name":"peer-1","fingerprint":"AbCdEf0123456789xyz","island":0,"devices":1,)"
           R"("steps_per_s":3.5,"last_round":3,"bytes_up":1200000,"bytes_down":800000,"connected":true,"in_sync":true,)"
           R"("seconds_per_step":0.286,"up_bytes_per_s":2500000,"down_bytes_per_s":12500000,)"
           R"("compute_s_per_round":14.3,"communication_s_per_round":1.7,"utilisation":0.89375,)"
           R"("came_in_on":"[2001:db8::1]:5555","came_from":"[2001:db8:2::2]:40122"},)"
           R"({"name":"peer-2","fingerprint":"ZZZ","island":1,"devices":2,"steps_per_s":1.25,"last_round":null,)"
           R"("bytes_up":0,"bytes_down":0,"connected":false,"in_sync":false}]})";
}

QByteArray canned_rounds() {
    return R"({"rounds":[)"
           R"({"round":1,"islands":2,"inner_loss":7.9,"val_loss":7.5,"bytes_up":400000,"bytes_down":300000,"compression_ratio":3.9,"seconds":4.1},)"
           R"({"round":2,"islands":2,"inner_loss":6.8,"val_loss":0,"bytes_up":410000,"bytes_down":300000,"compression_ratio":3.9,"seconds":4.0},)"
           R"({"round":3,"islands":2,"inner_loss":6.1,"val_loss":6.0,"bytes_up":405000,"bytes_down":300000,"compression_ratio":3.95,"seconds":3.9}]})";
}

quint16 free_port() {
    QTcpServer probe;
    probe.listen(QHostAddress::LocalHost, 0);
    return probe.serverPort();
}

}  // namespace arch::gui::test
