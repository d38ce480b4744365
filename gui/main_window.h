// gui/main_window.h: the app's window: a banner for the daemon's state, the start screen and the
// run view in a stack, and the daemon lifecycle: attach or start at open; at close, stop only a
// daemon this app started, and not even that when "keep the daemon running" is checked.
#pragma once

#include <QMainWindow>

#include "gui/app_settings.h"
#include "gui/daemon_client.h"
#include "gui/local_daemon.h"

class QLabel;
class QPushButton;
class QStackedWidget;

namespace arch::gui {

class RunView;
class StartScreen;

class MainWindow : public QMainWindow {
    Q_OBJECT
  public:
    explicit MainWindow(AppSettings settings, QWidget* parent = nullptr);

    void connect_daemon();  // attach or start (async), then poll
    void show_host_wizard();
    void show_join_dialog();
    void show_run_view();

    DaemonClient* client() { return &client_; }
    LocalDaemon* local_daemon() { return &daemon_; }
    RunView* run_view() const { return run_view_; }
    StartScreen* start_screen() const { return start_; }
    QLabel* banner() const { return banner_; }
    const AppSettings& settings() const { return settings_; }


  protected:
    void closeEvent(QCloseEvent* event) override;

  private:
    void on_link(DaemonClient::Link link, const QString& reason);
    void on_command(const QString& path, bool ok, const QString& error);

    AppSettings settings_;
    DaemonClient client_;
    LocalDaemon daemon_;
    QStackedWidget* stack_;
    StartScreen* start_;
    RunView* run_view_;
    QLabel* banner_;
    QPushButton* retry_;
    bool auto_switched_ = false;
};

}  // namespace arch::gui
