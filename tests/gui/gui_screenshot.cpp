// tests/gui/gui_screenshot.cpp: the README's screenshot (scripts/gui_screenshot.sh). The app's own main
// window, attached to a live daemon with archipelago-gui's options, saved to OUT once the run view
// shows ROUNDS rounds; then it exits (0: saved). Lives here, not in the app: the shipped program has
// no screenshot hook. usage: gui_screenshot OUT ROUNDS [archipelago-gui options]
#include <QApplication>
#include <QTimer>
#include <cstdio>
#include <cstdlib>

#include "gui/app_settings.h"
#include "gui/main_window.h"

int main(int argc, char** argv) {
    QApplication app(argc, argv);
    QApplication::setOrganizationName("Archipelago");
    QApplication::setApplicationName("archipelago-gui");
    const QStringList args = QApplication::arguments().mid(1);
    if (args.size() < 2) {
        std::fprintf(stderr, "usage: gui_screenshot OUT.png ROUNDS [archipelago-gui options]\n");
        return 2;
    }
    const QString out = args[0];
    const int rounds = args[1].toInt();
    arch::gui::AppSettings settings = arch::gui::AppSettings::load();
    if (const QString err = settings.apply_args(args.mid(2)); !err.isEmpty()) {
        std::fprintf(stderr, "error: %s\n", qPrintable(err));
        return 2;
    }
    arch::gui::MainWindow window(settings);
    bool taken = false;
    QObject::connect(window.client(), &arch::gui::DaemonClient::rounds_received, &window,
                     [&](const QList<arch::gui::RoundInfo>& shown) {
                         if (taken || shown.size() < rounds) return;
                         taken = true;
                         QTimer::singleShot(1500, &window, [&] {  // let the charts and the log repaint
                             const bool ok = window.grab().save(out);
                             std::fprintf(stderr, "gui_screenshot: %s %s\n", ok ? "saved" : "could not save", qPrintable(out));
                             QApplication::exit(ok ? 0 : 1);
                         });
                     });
    window.resize(1900, 1000);  // wide enough for every column of the peers table
    window.show();
    window.connect_daemon();
    return QApplication::exec();
}
