// tests/gui/fake_daemon.h: a stand-in for the daemon's control API in GUI tests: a QTcpServer on
// 127.0.0.1 that answers GET /api/status|peers|rounds|log with canned JSON and POST commands with
// {"ok":true} (or replies[path] when set), checks the bearer token (401 otherwise) and records
// every request it got.
#pragma once

#include <QByteArray>
#include <QHash>
#include <QList>
#include <QTcpServer>

namespace arch::gui::test {

struct FakeRequest {
    QByteArray method, path, authorization, body;
};

class FakeDaemon : public QObject {
    Q_OBJECT
  public:
    explicit FakeDaemon(QByteArray token, QObject* parent = nullptr);
    bool listen(quint16 port = 0);  // 0: any free port
    quint16 port() const { return server_.serverPort(); }
    void stop();  // closes the listening socket and every open connection

    QHash<QByteArray, QByteArray> replies;  // path (no query) -> JSON body, GET or POST
    QByteArray post_error;                  // non-empty: POSTs answer 400 {"error": post_error}
    QList<FakeRequest> requests;
    QList<FakeRequest> posts() const;

  signals:
    void request_received(const arch::gui::test::FakeRequest& r);

  private:
    void serve(QTcpSocket* socket);

    QTcpServer server_;
    QByteArray token_;
};

QByteArray canned_status();  // a host in round 3 of 10
QByteArray canned_peers();   // two peers
QByteArray canned_rounds();  // rounds 1..3
quint16 free_port();

}  // namespace arch::gui::test
