// gui/local_daemon.h: finds the daemon the app talks to: attaches to one already listening on the
// control port, or starts `archipelago daemon --control-port P --token-file F` detached (so a
// daemon can outlive the app when the user asks). It stops only a daemon it started, never one it
// attached to. Everything is async: a TCP probe, then QProcess::startDetached.
#pragma once

#include <QObject>
#include <QString>
#include <QTcpSocket>

namespace arch::gui {

class LocalDaemon : public QObject {
    Q_OBJECT
  public:
    enum class Ownership { None, Attached, Started };
    Q_ENUM(Ownership)

    LocalDaemon(QString archipelago, quint16 port, QString token_file, QObject* parent = nullptr);

    // Probes the port; attaches when something listens, else starts one if allowed. Emits ready().
    void attach_or_start(bool start_allowed);
    // Stops the daemon if this app started it (SIGTERM); an attached daemon is left alone.
    // Returns whether a stop signal was sent.
    bool stop_if_owned();

    Ownership ownership() const { return ownership_; }
    qint64 pid() const { return pid_; }  // of a started daemon, else 0
    QString log_file() const { return log_file_; }

  signals:
    // ownership: Attached, Started, or None (with a message saying why nothing runs)
    void ready(arch::gui::LocalDaemon::Ownership ownership, const QString& message);

  private:
    void start();

    QString archipelago_;
    quint16 port_;
    QString token_file_;
    QString log_file_;
    QTcpSocket probe_;
    bool start_allowed_ = true;
    Ownership ownership_ = Ownership::None;
    qint64 pid_ = 0;
};

}  // namespace arch::gui
