// gui/main_window.cpp: MainWindow. The banner is the "daemon not reachable" state: red, with the
// reason and a Retry button that probes again (and starts a daemon if allowed); the rest of the
// window keeps the last data it had. Command errors from the daemon go to a message box.
#include "gui/main_window.h"

#include <QAction>
#include <QApplication>
#include <QCloseEvent>
#include <QHBoxLayout>
#include <QLabel>
#include <QMenuBar>
#include <QMessageBox>
#include <QPushButton>
#include <QStackedWidget>
#include <QStatusBar>
#include <QVBoxLayout>

#include "gui/host_wizard.h"
#include "gui/join_dialog.h"
#include "gui/peer_invites.h"
#include "gui/run_view.h"
#include "gui/start_screen.h"

namespace arch::gui {

MainWindow::MainWindow(AppSettings settings, QWidget* parent)
    : QMainWindow(parent),
      settings_(std::move(settings)),
      client_(settings_.control_port, settings_.token_file),
      daemon_(settings_.archipelago, settings_.control_port, settings_.token_file) {
    setWindowTitle("Archipelago");
    resize(1280, 820);
    banner_ = new QLabel;
    banner_->setObjectName("daemon_banner");
    banner_->setWordWrap(true);
    banner_->setStyleSheet("background: #fdecea; color: #b00020; padding: 8px; font-weight: bold");
    retry_ = new QPushButton("Retry");
    auto* banner_row = new QWidget;
    auto* banner_box = new QHBoxLayout(banner_row);
    banner_box->setContentsMargins(0, 0, 0, 0);
    banner_box->addWidget(banner_, 1);
    banner_box->addWidget(retry_);
    banner_row->hide();

    start_ = new StartScreen;
    run_view_ = new RunView(&client_, settings_.archipelago);
    stack_ = new QStackedWidget;
    stack_->addWidget(start_);
    stack_->addWidget(run_view_);
    auto* central = new QWidget;
    auto* box = new QVBoxLayout(central);
    box->addWidget(banner_row);
    box->addWidget(stack_, 1);
    setCentralWidget(central);

    QMenu* app = menuBar()->addMenu("&Archipelago");
    app->addAction("Host a run...", this, &MainWindow::show_host_wizard);
    app->addAction("Join a run...", this, &MainWindow::show_join_dialog);
    app->addAction("Start screen", this, [this] { stack_->setCurrentWidget(start_); });
    app->addAction("Run view", this, &MainWindow::show_run_view);
    app->addSeparator();
    app->addAction("Quit", this, &QWidget::close);
    QMenu* daemon_menu = menuBar()->addMenu("&Daemon");
    QAction* keep = daemon_menu->addAction("Keep a daemon started here running after closing");
    keep->setCheckable(true);
    keep->setChecked(settings_.keep_daemon_running);
    connect(keep, &QAction::toggled, this, [this](bool on) {
        settings_.keep_daemon_running = on;
        settings_.save();
    });

    connect(start_, &StartScreen::host_clicked, this, &MainWindow::show_host_wizard);
    connect(start_, &StartScreen::join_clicked, this, &MainWindow::show_join_dialog);
    connect(start_, &StartScreen::watch_clicked, this, &MainWindow::show_run_view);
    connect(retry_, &QPushButton::clicked, this, &MainWindow::connect_daemon);
    connect(&client_, &DaemonClient::link_changed, this,
            [this, banner_row](DaemonClient::Link link, const QString& why) {
                banner_row->setVisible(link == DaemonClient::Link::Unreachable ||
                                       link == DaemonClient::Link::Unauthorized);
                on_link(link, why);
            });
    connect(&client_, &DaemonClient::status_received, this, [this](const DaemonStatus& s) {
        run_view_->show_status(s);
        if (s.role != "idle" && !auto_switched_) {  // a run is on: show it, once
            auto_switched_ = true;
            show_run_view();
        }
    });
    connect(&client_, &DaemonClient::peers_received, run_view_, &RunView::show_peers);
    connect(&client_, &DaemonClient::rounds_received, run_view_, &RunView::show_rounds);
    connect(&client_, &DaemonClient::log_received, run_view_, &RunView::show_log);
    connect(&client_, &DaemonClient::command_finished, this, &MainWindow::on_command);
    connect(&daemon_, &LocalDaemon::ready, this,
            [this](LocalDaemon::Ownership, const QString& message) {
                statusBar()->showMessage(message);
                client_.start_polling();
            });
}

void MainWindow::connect_daemon() {
    start_->set_daemon_text(
        QString("looking for a daemon on 127.0.0.1:%1...").arg(settings_.control_port), true);
    daemon_.attach_or_start(settings_.start_daemon &&
                            daemon_.ownership() != LocalDaemon::Ownership::Started);
}

void MainWindow::on_link(DaemonClient::Link link, const QString& reason) {
    const bool ok = link == DaemonClient::Link::Reachable;
    start_->set_daemon_text(reason, ok);
    run_view_->set_reachable(ok);
    if (link == DaemonClient::Link::Unreachable) {
        banner_->setText(reason +
                         ". The run view shows the last data received; Retry looks again"
                         " (and starts a daemon if none runs).");
    } else if (link == DaemonClient::Link::Unauthorized) {
        banner_->setText(reason + ". Check --token-file (the daemon's token file).");
    }
}

void MainWindow::on_command(const QString& path, bool ok, const QString& error) {
    if (ok) {
        statusBar()->showMessage(path + ": done", 5000);
        return;
    }
    statusBar()->showMessage(path + ": " + error);
    if (isVisible())
        QMessageBox::warning(this, "Archipelago", QString("%1 failed: %2").arg(path, error));
}

void MainWindow::show_host_wizard() {
    auto* wizard = new HostWizard(&client_, settings_.archipelago, settings_.runs_dir, this);
    wizard->setAttribute(Qt::WA_DeleteOnClose);
    connect(wizard, &HostWizard::run_hosted, this, [this](const QString& toml) {
        run_view_->invites()->set_run_toml(toml);
        show_run_view();
    });
    wizard->open();
}

void MainWindow::show_join_dialog() {
    auto* dialog = new JoinDialog(&client_, settings_.archipelago, settings_.keys_dir, this);
    dialog->setAttribute(Qt::WA_DeleteOnClose);
    connect(dialog, &QDialog::accepted, this, &MainWindow::show_run_view);
    dialog->open();
}

void MainWindow::show_run_view() {
    stack_->setCurrentWidget(run_view_);
}

void MainWindow::closeEvent(QCloseEvent* event) {
    client_.stop_polling();
    if (!settings_.keep_daemon_running)
        daemon_.stop_if_owned();  // an attached daemon is never stopped
    event->accept();
}

}  // namespace arch::gui
