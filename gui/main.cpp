// gui/main.cpp: archipelago-gui's entry: settings (QSettings, then command-line overrides), the
// main window, and the daemon hook-up. `archipelago-gui --help` lists the options.
#include <QApplication>
#include <cstdio>

#include "gui/app_settings.h"
#include "gui/main_window.h"

int main(int argc, char** argv) {
    QApplication app(argc, argv);
    QApplication::setOrganizationName("Archipelago");
    QApplication::setApplicationName("archipelago-gui");
    const QStringList args = QApplication::arguments().mid(1);
    if (args.contains("--help") || args.contains("-h")) {
        std::printf(
            "usage: archipelago-gui [--port P] [--token-file F] [--archipelago PATH] [--runs-dir "
            "D]\n"
            "                       [--attach-only] [--keep-daemon]\n"
            "  attaches to the daemon on 127.0.0.1:P (default 7480), or starts `archipelago "
            "daemon` there;\n"
            "  closing the app stops only a daemon it started (never with --keep-daemon).\n");
        return 0;
    }
    arch::gui::AppSettings settings = arch::gui::AppSettings::load();
    if (const QString err = settings.apply_args(args); !err.isEmpty()) {
        std::fprintf(stderr, "error: %s (archipelago-gui --help lists the options)\n",
                     qPrintable(err));
        return 2;
    }
    arch::gui::MainWindow window(settings);
    window.show();
    window.connect_daemon();
    return QApplication::exec();
}
