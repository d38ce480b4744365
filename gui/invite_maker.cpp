// gui/invite_maker.cpp: InviteMaker. The allow-list and the host key are `archipelago invite`'s
// business (it writes run.checkpoint_dir); this class only sequences the two commands and reports
// the CLI's own error message (its stderr) when one fails.
#include "gui/invite_maker.h"

#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QProcess>

namespace arch::gui {

InviteMaker::InviteMaker(QString archipelago, QObject* parent)
    : QObject(parent), archipelago_(std::move(archipelago)) {}

QString InviteMaker::peers_dir(const QString& run_toml) {
    return QFileInfo(run_toml).absolutePath() + "/peers";
}

QString InviteMaker::invite_path(const QString& run_toml, const QString& name) {
    return peers_dir(run_toml) + "/" + name + ".invite";
}

void InviteMaker::fail(const QString& name, const QString& error) {
    busy_ = false;
    emit failed(name, error);
}

void InviteMaker::run_step(const QString& name, const QStringList& args,
                           std::function<void()> next) {
    auto* p = new QProcess(this);
    connect(p, &QProcess::finished, this,
            [this, p, name, next](int code, QProcess::ExitStatus status) {
                p->deleteLater();
                if (status == QProcess::NormalExit && code == 0) return next();
                fail(name, QString::fromUtf8(p->readAllStandardError()).trimmed());
            });
    connect(p, &QProcess::errorOccurred, this, [this, p, name](QProcess::ProcessError e) {
        if (e != QProcess::FailedToStart) return;
        p->deleteLater();
        fail(name, QString("could not run '%1': %2").arg(archipelago_, p->errorString()));
    });
    p->start(archipelago_, args);
}

void InviteMaker::make(const QString& run_toml, const QString& name,
                       const QString& public_key_text) {
    busy_ = true;
    QDir().mkpath(peers_dir(run_toml));
    const QString key = peers_dir(run_toml) + "/" + name + ".key";
    const QString pub = key + ".pub";
    const QString invite = invite_path(run_toml, name);
    const QString made_key = public_key_text.isEmpty() ? key : QString();
    auto make_invite = [this, run_toml, name, pub, invite, made_key] {
        run_step(
            name,
            {"invite", "--config", run_toml, "--peer-key", pub, "--name", name, "--out", invite},
            [this, name, invite, made_key] {
                busy_ = false;
                emit made(name, invite, made_key);
            });
    };
    if (public_key_text.isEmpty()) return run_step(name, {"keygen", "--out", key}, make_invite);
    QFile f(pub);
    if (!f.open(QIODevice::WriteOnly | QIODevice::Truncate) ||
        f.write((public_key_text + "\n").toUtf8()) < 0)
        return fail(name, QString("could not write %1").arg(pub));
    f.close();
    make_invite();
}

void InviteMaker::make_key(const QString& run_toml, const QString& name) {
    busy_ = true;
    QDir().mkpath(peers_dir(run_toml));
    const QString key = peers_dir(run_toml) + "/" + name + ".key";
    run_step(name, {"keygen", "--out", key}, [this, name, key] {
        busy_ = false;
        emit key_made(name, key);
    });
}

}  // namespace arch::gui
