// gui/app_settings.cpp: AppSettings from QSettings, defaults, and command-line overrides.
// Defaults use QStandardPaths so tests (QStandardPaths::setTestModeEnabled) never touch the user's.
#include "gui/app_settings.h"

#include <QCoreApplication>
#include <QFileInfo>
#include <QSettings>
#include <QStandardPaths>

namespace arch::gui {
namespace {

QString default_archipelago() {
    const QString beside = QCoreApplication::applicationDirPath() + "/archipelago";
    if (QFileInfo(beside).isExecutable()) return beside;
    const QString on_path = QStandardPaths::findExecutable("archipelago");
    return on_path.isEmpty() ? QString("archipelago") : on_path;
}

}  // namespace

AppSettings AppSettings::load() {
    QSettings q("Archipelago", "archipelago-gui");
    AppSettings s;
    s.control_port = static_cast<quint16>(q.value("daemon/control_port", s.control_port).toUInt());
    s.token_file = q.value("daemon/token_file").toString();
    s.archipelago = q.value("daemon/archipelago").toString();
    s.runs_dir = q.value("paths/runs_dir").toString();
    s.keys_dir = q.value("paths/keys_dir").toString();
    s.start_daemon = q.value("daemon/start_daemon", true).toBool();
    s.keep_daemon_running = q.value("daemon/keep_running", false).toBool();
    const QString config = QStandardPaths::writableLocation(QStandardPaths::GenericConfigLocation);
    const QString data = QStandardPaths::writableLocation(QStandardPaths::AppDataLocation);
    if (s.token_file.isEmpty()) s.token_file = qEnvironmentVariable("ARCH_TOKEN_FILE");
    if (s.token_file.isEmpty()) s.token_file = config + "/archipelago/token";
    if (s.archipelago.isEmpty()) s.archipelago = default_archipelago();
    if (s.runs_dir.isEmpty()) s.runs_dir = data + "/runs";
    if (s.keys_dir.isEmpty()) s.keys_dir = data + "/keys";
    return s;
}

void AppSettings::save() const {
    QSettings q("Archipelago", "archipelago-gui");
    q.setValue("daemon/control_port", control_port);
    q.setValue("daemon/token_file", token_file);
    q.setValue("daemon/archipelago", archipelago);
    q.setValue("paths/runs_dir", runs_dir);
    q.setValue("paths/keys_dir", keys_dir);
    q.setValue("daemon/start_daemon", start_daemon);
    q.setValue("daemon/keep_running", keep_daemon_running);
}

QString AppSettings::apply_args(const QStringList& args) {
    for (int i = 0; i < args.size(); ++i) {
        const QString& a = args[i];
        auto value = [&](QString& out) {
            if (i + 1 >= args.size()) return false;
            out = args[++i];
            return true;
        };
        QString v;
        if (a == "--attach-only") {
            start_daemon = false;
        } else if (a == "--keep-daemon") {
            keep_daemon_running = true;
        } else if (a == "--port") {
            bool ok = false;
            const uint p = value(v) ? v.toUInt(&ok) : 0;
            if (!ok || p == 0 || p > 65535)
                return "--port needs a TCP port in 1..65535, got '" + v + "'";
            control_port = static_cast<quint16>(p);
        } else if (a == "--token-file") {
            if (!value(token_file)) return "--token-file needs a path";
        } else if (a == "--archipelago") {
            if (!value(archipelago))
                return "--archipelago needs the path of the archipelago binary";
        } else if (a == "--runs-dir") {
            if (!value(runs_dir)) return "--runs-dir needs a folder";
        } else {
            return "unknown option '" + a + "'";
        }
    }
    return {};
}

}  // namespace arch::gui
