// gui/run_view.h: the run view: a header (run, role, state, round progress, tokens/s, compression
// ratio, pause/resume/leave), the loss and bandwidth charts, the peers table, the host's invite
// panel and the daemon's log. It shows what the DaemonClient delivers and sends commands through
// it.
#pragma once

#include <QList>
#include <QWidget>

#include "gui/daemon_types.h"

class QLabel;
class QPlainTextEdit;
class QProgressBar;
class QPushButton;
class QTableWidget;
class QTabWidget;

namespace arch::gui {

class DaemonClient;
class PeerInvites;
class RunCharts;

class RunView : public QWidget {
    Q_OBJECT
  public:
    RunView(DaemonClient* client, QString archipelago, QWidget* parent = nullptr);

    void show_status(const DaemonStatus& s);
    void show_peers(const QList<PeerInfo>& peers);
    void show_rounds(const QList<RoundInfo>& rounds);
    void show_log(const QStringList& lines);
    void set_reachable(bool reachable);

    PeerInvites* invites() const { return invites_; }
    RunCharts* charts() const { return charts_; }
    QTableWidget* peers_table() const { return peers_; }
    int rounds_shown() const { return rounds_shown_; }

  private:
    DaemonClient* client_;
    QLabel* title_;
    QLabel* state_;
    QProgressBar* progress_;
    QLabel* speed_;
    QLabel* ratio_;
    QLabel* steps_;    // H of the round, and why (H from the link)
    QLabel* reachability_;  // a host's port mapping: the address peers outside reach, or what to do
    QLabel* privacy_;  // ε spent of the budget, in a run with differential privacy
    QPushButton* pause_;
    QPushButton* leave_;
    RunCharts* charts_;
    QTabWidget* tabs_;
    QTableWidget* peers_;
    PeerInvites* invites_;
    QPlainTextEdit* log_;
    bool paused_ = false;
    int rounds_shown_ = 0;
};

}  // namespace arch::gui
