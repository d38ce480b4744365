// gui/peer_invites.h: the host's "Invite peers" panel: lists the peers invited from this run
// folder (clicking one shows its invite text, with a Copy button) and whether the daemon reports
// them admitted; "Add peer" makes another invite through InviteMaker (keygen + invite, async).
// While the daemon hosts the run (set_hosting), inviting goes through POST /api/invite and each
// listed peer has a Revoke button (POST /api/revoke); the running host applies both at once.
#pragma once

#include <QList>
#include <QWidget>

#include "gui/daemon_client.h"
#include "gui/daemon_types.h"
#include "gui/invite_maker.h"

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
    void set_daemon(DaemonClient* client);            // the daemon that hosts the run, for invite/revoke
    void set_hosting(bool hosting);                   // the daemon hosts this run now

  signals:
    void invite_made(const QString& name, const QString& invite_path);
    void invite_failed(const QString& name, const QString& error);

  private:
    void finish_invite(const QString& name, const QString& invite_path, const QString& key_path);
    void show_invite(const QString& name);
    void reload_invited();
    void invite_through_daemon(const QString& name, const QString& public_key_text);
    void finish_daemon_invite(const QString& name, const QString& invite_text);
    void revoke(const QString& name);
    void mark_revoked(const QString& name);

    InviteMaker* maker_;
    QString run_toml_;
    QLabel* run_label_;
    QLineEdit* name_;
    QLineEdit* public_key_;
    QPushButton* add_;
    QPlainTextEdit* invite_;
    QPushButton* copy_;
    QLabel* note_;
    QTableWidget* invited_;
    DaemonClient* client_ = nullptr;
    bool hosting_ = false;
    QString revoking_;        // the name of the revoke in flight
    QStringList revoked_;     // names revoked from this panel during this run
};

}  // namespace arch::gui
