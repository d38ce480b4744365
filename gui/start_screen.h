// gui/start_screen.h: the first screen: "Host a run", "Join a run", "Watch the run", and a line
// saying which daemon the app talks to and whether it answers. It only emits what was clicked.
#pragma once

#include <QWidget>

class QLabel;
class QPushButton;

namespace arch::gui {

class StartScreen : public QWidget {
    Q_OBJECT
  public:
    explicit StartScreen(QWidget* parent = nullptr);
    void set_daemon_text(const QString& text, bool ok);

  signals:
    void host_clicked();
    void join_clicked();
    void watch_clicked();

  private:
    QLabel* daemon_;
};

}  // namespace arch::gui
