// gui/app_settings.h: the app's settings (QSettings "Archipelago/archipelago-gui"), overridable
// from the command line: which daemon port and token file to use, where the `archipelago` binary
// and the run folders are, and whether a daemon the app started keeps running after it closes.
#pragma once

#include <QString>
#include <QStringList>

namespace arch::gui {

struct AppSettings {
    quint16 control_port = 7480;  // the daemon's default (docs/control-api.md)
    QString
        token_file;  // default as the daemon's: $ARCH_TOKEN_FILE, else ~/.config/archipelago/token
    QString archipelago;  // default: `archipelago` beside this executable, else on PATH
    QString runs_dir;     // default: <app data dir>/runs; the wizard makes <runs_dir>/<run name>
    QString keys_dir;     // default: <app data dir>/keys; "Join" generates keys here
    bool start_daemon = true;          // start a local daemon when none answers on control_port
    bool keep_daemon_running = false;  // when the app started it: leave it running on close

    static AppSettings load();  // QSettings, then defaults for what is empty
    void save() const;
    // --port P --token-file F --archipelago PATH --runs-dir D --attach-only --keep-daemon;
    // returns an error message for an unknown or incomplete option, else empty.
    QString apply_args(const QStringList& args);
};

}  // namespace arch::gui
