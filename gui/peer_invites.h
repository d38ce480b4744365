// gui/peer_invites.h: the host's "Invite peers" panel. For a peer name it runs `archipelago
// keygen` (unless the peer's public key was pasted) and `archipelago invite` with the run's
// run.toml via QProcess (async), then shows the invite text with a Copy button. It also lists the
// peers invited from this run folder and whether the daemon reports them connected.
#pragma once

#include <QList>
#include <QWidget>

#include "gui/daemon_types.h"

class QLabel;
class QLineEdit;
class QPlainTextEdit;
class QPushButton;
class QTableWidget;

namespace arch::gui {

class PeerInvites : public QWidget {
    Q_OBJECT
  public:
    PeerInvites(QString archipelago, QWidget* parent = nullptr);

    void set_run_toml(const QString& path);  // the run the invites are for; empty: none yet
    QString run_toml() const { return run_toml_; }
    void add_peer(const QString& name, const QString& public_key_text);  // async; emits invite_made
    void update_peers(const QList<PeerInfo>& peers);  // marks invited peers connected
    QString invite_text() const;                      // of the last invite made

  signals:
    void invite_made(const QString& name, const QString& invite_path);
    void invite_failed(const QString& name, const QString& error);

  private:
    QString peers_dir() const;
    void run_step(const QString& name, const QStringList& args, std::function<void()> next);
    void finish_invite(const QString& name, const QString& invite_path, const QString& key_path);
    void reload_invited();

    QString archipelago_;
    QString run_toml_;
    QLabel* run_label_;
    QLineEdit* name_;
    QLineEdit* public_key_;
    QPushButton* add_;
    QPlainTextEdit* invite_;
    QPushButton* copy_;
    QLabel* note_;
    QTableWidget* invited_;
};

}  // namespace arch::gui
