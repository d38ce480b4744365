// gui/daemon_client.h: the app's only link to a daemon: async HTTP to its control API on
// 127.0.0.1 with the bearer token, a poll of status/peers/rounds/log every second, and commands.
// Never blocks: every request is a QNetworkReply handled in a slot. A refused, reset or timed-out
// request puts the client in the Unreachable state (with the reason) until a poll succeeds again.
#pragma once

#include <QJsonObject>
#include <QNetworkAccessManager>
#include <QObject>
#include <QTimer>

#include "gui/daemon_types.h"

namespace arch::gui {

class DaemonClient : public QObject {
    Q_OBJECT
  public:
    enum class Link { Unknown, Reachable, Unreachable, Unauthorized };
    Q_ENUM(Link)

    // token_file is re-read whenever the daemon answers 401 (a daemon that just started writes it).
    DaemonClient(quint16 port, QString token_file, QObject* parent = nullptr);

    void start_polling(int interval_ms = 1000);
    void stop_polling();
    void poll_now();  // one round of the four GETs (skipped while the previous round is in flight)

    // Commands: the reply arrives as command_finished(path, ok, error message).
    void host(const QString& run_toml);
    void join(const QString& invite_text, const QString& key_path);
    void leave();
    void pause();
    void resume();
    // While the daemon hosts a run: allow a peer (the answer's invite text comes as invite_received)
    // and take one off the allow-list.
    void invite(const QString& name, const QString& public_key);
    void revoke(const QString& name);

    Link link() const { return link_; }
    QString link_reason() const { return link_reason_; }
    quint16 port() const { return port_; }
    QString token_file() const { return token_file_; }
    void set_timeout_ms(int ms) { timeout_ms_ = ms; }
    int log_lines = 300;

  signals:
    void link_changed(arch::gui::DaemonClient::Link link, const QString& reason);
    void status_received(const arch::gui::DaemonStatus& status);
    void peers_received(const QList<arch::gui::PeerInfo>& peers);
    void rounds_received(const QList<arch::gui::RoundInfo>& rounds);
    void log_received(const QStringList& lines);
    void command_finished(const QString& path, bool ok, const QString& error);
    void invite_received(const QString& name, const QString& invite_text);  // after a good /api/invite

  private:
    QNetworkRequest request(const QString& path_and_query);
    void get(const QString& path_and_query);
    void post(const QString& path, const QJsonObject& body);
    void on_get_finished(QNetworkReply* reply, const QString& path);
    bool check_link(QNetworkReply* reply);  // updates link_; false when the daemon did not answer
    void set_link(Link link, const QString& reason);
    void reload_token();

    QNetworkAccessManager net_;
    QTimer timer_;
    quint16 port_;
    QString token_file_;
    QByteArray token_;
    int in_flight_ = 0;
    int timeout_ms_ = 2500;
    Link link_ = Link::Unknown;
    QString link_reason_;
};

}  // namespace arch::gui
