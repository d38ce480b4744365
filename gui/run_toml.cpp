// gui/run_toml.cpp: HostRunSettings -> run.toml text. Strings are TOML basic strings with
// backslashes and quotes escaped; settings the wizard does not ask for keep the daemon's defaults.
#include "gui/run_toml.h"

#include <QStringList>

namespace arch::gui {
namespace {

QString quoted(QString s) {
    s.replace('\\', "\\\\").replace('"', "\\\"");
    return '"' + s + '"';
}

}  // namespace

QString to_run_toml(const HostRunSettings& s) {
    QStringList t;
    t << "# run.toml written by archipelago-gui (Host a run); every key is in docs/run-config.md"
      << "[run]"
      << "name = " + quoted(s.name) << QString("rounds = %1").arg(s.rounds)
      << QString("islands = %1").arg(s.islands) << "mode = " + quoted(s.mode)
      << "bind = " + quoted(s.bind) << "nat = " + quoted(s.nat) << "checkpoint_dir = " + quoted(s.run_dir) << ""
      << "[model]"
      << "config = " + quoted(s.preset);
    if (!s.init_hf.isEmpty()) t << "init_hf = " + quoted(s.init_hf);
    t << "";
    if (!s.train_data.isEmpty()) {
        t << "[data]"
          << "train = " + quoted(s.train_data);
        if (!s.val_data.isEmpty()) t << "val = " + quoted(s.val_data);
        t << "";
    }
    t << "[inner]" << QString("steps_per_round = %1").arg(s.steps_per_round) << ""
      << "[wire]"
      << "codec = " + quoted(s.codec);
    return t.join('\n') + '\n';
}

}  // namespace arch::gui
