// gui/local_daemon.cpp: LocalDaemon. The daemon is started detached with its output in
// daemon.log beside the token file; the app keeps its pid and sends SIGTERM to stop it, so the
// daemon shuts down its run cleanly (a QProcess child would be killed when the app exits).
#include "gui/local_daemon.h"

#include <signal.h>

#include <QDir>
#include <QFileInfo>
#include <QHostAddress>
#include <QProcess>

namespace arch::gui {

LocalDaemon::LocalDaemon(QString archipelago, quint16 port, QString token_file, QObject* parent)
    : QObject(parent),
      archipelago_(std::move(archipelago)),
      port_(port),
      token_file_(std::move(token_file)) {
    log_file_ = QFileInfo(token_file_).absolutePath() + "/daemon.log";
    connect(&probe_, &QTcpSocket::connected, this, [this] {
        probe_.abort();
        ownership_ = Ownership::Attached;
        emit ready(ownership_, QString("attached to the daemon on 127.0.0.1:%1").arg(port_));
    });
    connect(&probe_, &QTcpSocket::errorOccurred, this, [this](QAbstractSocket::SocketError) {
        probe_.abort();
        if (start_allowed_) {
            start();
        } else {
            emit ready(Ownership::None, QString("no daemon listens on 127.0.0.1:%1").arg(port_));
        }
    });
}

void LocalDaemon::attach_or_start(bool start_allowed) {
    start_allowed_ = start_allowed;
    probe_.abort();
    probe_.connectToHost(QHostAddress::LocalHost, port_);
}

void LocalDaemon::start() {
    QDir().mkpath(QFileInfo(token_file_).absolutePath());
    QProcess p;
    p.setProgram(archipelago_);
    p.setArguments(
        {"daemon", "--control-port", QString::number(port_), "--token-file", token_file_});
    p.setStandardOutputFile(log_file_, QIODevice::Append);
    p.setStandardErrorFile(log_file_, QIODevice::Append);
    qint64 pid = 0;
    if (!p.startDetached(&pid)) {
        emit ready(Ownership::None,
                   QString("could not start '%1 daemon': %2").arg(archipelago_, p.errorString()));
        return;
    }
    pid_ = pid;
    ownership_ = Ownership::Started;
    emit ready(ownership_,
               QString("started a daemon (pid %1) on 127.0.0.1:%2; its output goes to %3")
                   .arg(pid_)
                   .arg(port_)
                   .arg(log_file_));
}

bool LocalDaemon::stop_if_owned() {
    if (ownership_ != Ownership::Started || pid_ <= 0) return false;
    const bool sent = ::kill(static_cast<pid_t>(pid_), SIGTERM) == 0;
    ownership_ = Ownership::None;
    pid_ = 0;
    return sent;
}

}  // namespace arch::gui
