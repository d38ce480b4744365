// gui/run_view.cpp: RunView's layout and the show_* functions. Byte counts are shown in MB, the
// fingerprint is cut to 16 characters (the tooltip has all of it); the log pane keeps its scroll
// position unless it was at the bottom, so reading old lines is not interrupted by the poll.
#include "gui/run_view.h"

#include <QFontDatabase>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QPlainTextEdit>
#include <QProgressBar>
#include <QPushButton>
#include <QScrollBar>
#include <QSplitter>
#include <QTabWidget>
#include <QTableWidget>
#include <QVBoxLayout>

#include "gui/daemon_client.h"
#include "gui/peer_invites.h"
#include "gui/run_charts.h"

namespace arch::gui {
namespace {

const QStringList kPeerColumns = {"name",      "fingerprint", "island",     "devices",   "steps/s",
                                  "last round", "MB up",      "MB down",    "s/step",    "up MB/s",
                                  "down MB/s",  "compute s/round", "comm s/round", "busy", "came in on",
                                  "connected",  "in sync"};
const int kCameInOnColumn = int(kPeerColumns.indexOf("came in on"));
const int kFirstYesNoColumn = int(kPeerColumns.indexOf("connected"));

// A figure the host measures, or "-" before it has one.
QString measured(double v, int decimals) {
    return v > 0 ? QString::number(v, 'f', decimals) : QString("-");
}

QString mb(double bytes) {
    return QString::number(bytes / 1e6, 'f', 2);
}

}  // namespace

RunView::RunView(DaemonClient* client, QString archipelago, QWidget* parent)
    : QWidget(parent), client_(client) {
    title_ = new QLabel;
    title_->setObjectName("run_title");
    state_ = new QLabel;
    state_->setObjectName("run_state");
    progress_ = new QProgressBar;
    progress_->setObjectName("round_progress");
    progress_->setFormat("round %v of %m");
    progress_->setRange(0, 1);
    speed_ = new QLabel;
    ratio_ = new QLabel;
    ratio_->setObjectName("compression_ratio");
    steps_ = new QLabel;
    steps_->setObjectName("steps_per_round");
    steps_->setWordWrap(true);
    steps_->setTextFormat(Qt::PlainText);
    reachability_ = new QLabel;
    reachability_->setObjectName("reachability");
    reachability_->setWordWrap(true);
    reachability_->setTextFormat(Qt::PlainText);
    privacy_ = new QLabel;
    privacy_->setObjectName("privacy");
    pause_ = new QPushButton("Pause");
    leave_ = new QPushButton("Leave");
    charts_ = new RunCharts;
    peers_ = new QTableWidget(0, int(kPeerColumns.size()));
    peers_->setObjectName("peers_table");
    peers_->setHorizontalHeaderLabels(kPeerColumns);
    peers_->horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
    peers_->horizontalHeader()->setStretchLastSection(true);
    peers_->verticalHeader()->hide();
    peers_->setEditTriggers(QAbstractItemView::NoEditTriggers);
    invites_ = new PeerInvites(std::move(archipelago));
    invites_->set_daemon(client_);  // while it hosts: invite and revoke through its control API
    tabs_ = new QTabWidget;
    tabs_->addTab(peers_, "Peers");
    tabs_->addTab(invites_, "Invite peers");
    log_ = new QPlainTextEdit;
    log_->setObjectName("log_pane");
    log_->setReadOnly(true);
    log_->setFont(QFontDatabase::systemFont(QFontDatabase::FixedFont));
    log_->setMaximumBlockCount(5000);

    auto* header = new QHBoxLayout;
    auto* names = new QVBoxLayout;
    names->addWidget(title_);
    names->addWidget(state_);
    header->addLayout(names, 2);
    header->addWidget(progress_, 2);
    auto* numbers = new QVBoxLayout;
    numbers->addWidget(speed_);
    numbers->addWidget(ratio_);
    numbers->addWidget(steps_);
    numbers->addWidget(reachability_);
    numbers->addWidget(privacy_);
    header->addLayout(numbers, 1);
    header->addWidget(pause_);
    header->addWidget(leave_);
    auto* bottom = new QSplitter(Qt::Horizontal);
    bottom->addWidget(tabs_);
    bottom->addWidget(log_);
    bottom->setStretchFactor(0, 3);
    bottom->setStretchFactor(1, 2);
    auto* body = new QSplitter(Qt::Vertical);
    body->addWidget(charts_);
    body->addWidget(bottom);
    body->setStretchFactor(0, 3);
    body->setStretchFactor(1, 2);
    auto* box = new QVBoxLayout(this);
    box->addLayout(header);
    box->addWidget(body, 1);

    connect(pause_, &QPushButton::clicked, this,
            [this] { paused_ ? client_->resume() : client_->pause(); });
    connect(leave_, &QPushButton::clicked, client_, &DaemonClient::leave);
    show_status(DaemonStatus{});
}

void RunView::show_status(const DaemonStatus& s) {
    const QString role = s.role == "host" ? "hosting" : s.role == "peer" ? "island in" : "idle";
    title_->setText(s.run.isEmpty() ? QString("<b>No run</b> (the daemon is idle)")
                                    : QString("<b>%1</b> &mdash; %2 run, %3 mode, %4 islands")
                                          .arg(s.run.toHtmlEscaped(), role, s.mode.toHtmlEscaped())
                                          .arg(s.islands));
    state_->setText(QString("state: %1%2")
                        .arg(s.state.isEmpty() ? "-" : s.state,
                             s.theta_hash.isEmpty() ? QString() : "   θ " + s.theta_hash.left(12)));
    invites_->set_hosting(s.role == "host" && (s.state == "waiting" || s.state == "training" || s.state == "paused"));
    progress_->setRange(0, std::max(1, s.rounds));
    progress_->setValue(std::clamp(s.round, 0, std::max(1, s.rounds)));
    speed_->setText(QString("%1 tokens/s").arg(s.tokens_per_s, 0, 'f', 0));
    steps_->setVisible(s.steps_per_round > 0);
    steps_->setText(QString("H %1 (%2)").arg(s.steps_per_round).arg(s.steps_why));
    reachability_->setVisible(s.role == "host" && s.reachability != "off");
    reachability_->setText(s.reachability == "mapped" ? "reachable at " + s.external_endpoint + " (" + s.reachability + ")"
                                                       : s.reachability + ": " + s.reachability_detail);
    privacy_->setVisible(!s.privacy_mode.isEmpty());
    privacy_->setText(QString("privacy (%1): ε %2 of %3 spent, δ %4")
                          .arg(s.privacy_mode.toHtmlEscaped())
                          .arg(s.epsilon_spent, 0, 'f', 2)
                          .arg(s.epsilon_budget, 0, 'g', 4)
                          .arg(s.delta, 0, 'g', 3));
    paused_ = s.paused;
    pause_->setText(s.paused ? "Resume" : "Pause");
    const bool active = s.role != "idle";
    pause_->setEnabled(active);
    leave_->setEnabled(active);
}

void RunView::show_peers(const QList<PeerInfo>& peers) {
    peers_->setRowCount(int(peers.size()));
    for (int row = 0; row < peers.size(); ++row) {
        const PeerInfo& p = peers[row];
        const QStringList cells = {p.name,
                                   p.fingerprint.left(16),
                                   QString::number(p.island),
                                   QString::number(p.devices),
                                   QString::number(p.steps_per_s, 'f', 2),
                                   p.last_round < 0 ? QString("-") : QString::number(p.last_round),
                                   mb(p.bytes_up),
                                   mb(p.bytes_down),
                                   measured(p.seconds_per_step, 3),
                                   measured(p.up_bytes_per_s / 1e6, 2),
                                   measured(p.down_bytes_per_s / 1e6, 2),
                                   measured(p.compute_s_per_round, 2),
                                   p.utilisation > 0 ? QString::number(p.communication_s_per_round, 'f', 2) : QString("-"),
                                   p.utilisation > 0 ? QString::number(100 * p.utilisation, 'f', 0) + "%" : QString("-"),
                                   p.came_in_on.isEmpty() ? QString("-") : p.came_in_on,
                                   p.connected ? "yes" : "no",
                                   p.in_sync ? "yes" : "no"};
        for (int col = 0; col < cells.size(); ++col) {
            auto* item = new QTableWidgetItem(cells[col]);
            if (col == 1) item->setToolTip(p.fingerprint);
            if (col == kCameInOnColumn && !p.came_from.isEmpty()) item->setToolTip("from " + p.came_from);
            if (col >= kFirstYesNoColumn)
                item->setForeground(cells[col] == "yes" ? QColor("#2e7d32") : QColor("#b00020"));
            peers_->setItem(row, col, item);
        }
    }
    invites_->update_peers(peers);
}

void RunView::show_rounds(const QList<RoundInfo>& rounds) {
    rounds_shown_ = int(rounds.size());
    charts_->set_rounds(rounds);
    if (rounds.isEmpty()) {
        ratio_->setText("compression: -");
        return;
    }
    const RoundInfo& last = rounds.last();
    ratio_->setText(QString("compression %1x, %2 MB up last round")
                        .arg(last.compression_ratio, 0, 'f', 1)
                        .arg(last.bytes_up / 1e6, 0, 'f', 2));
}

void RunView::show_log(const QStringList& lines) {
    QScrollBar* bar = log_->verticalScrollBar();
    const bool at_bottom = bar->value() == bar->maximum();
    const int keep = bar->value();
    const QString text = lines.join('\n');
    if (text == log_->toPlainText()) return;
    log_->setPlainText(text);
    bar->setValue(at_bottom ? bar->maximum() : keep);
}

void RunView::set_reachable(bool reachable) {
    pause_->setEnabled(reachable && pause_->isEnabled());
    leave_->setEnabled(reachable && leave_->isEnabled());
    charts_->setEnabled(reachable);
}

}  // namespace arch::gui
