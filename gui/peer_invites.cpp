// gui/peer_invites.cpp: PeerInvites. Files go to <run folder>/peers/NAME.key(.pub) and NAME.invite;
// the allow-list itself is `archipelago invite`'s business (it writes run.checkpoint_dir), so this
// panel never edits the host's files directly. One QProcess at a time; the button is off meanwhile.
#include "gui/peer_invites.h"

#include <QApplication>
#include <QClipboard>
#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QFontDatabase>
#include <QFormLayout>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QLineEdit>
#include <QPlainTextEdit>
#include <QProcess>
#include <QPushButton>
#include <QRegularExpressionValidator>
#include <QTableWidget>
#include <QVBoxLayout>

namespace arch::gui {
namespace {

QString read_text(const QString& path) {
    QFile f(path);
    return f.open(QIODevice::ReadOnly) ? QString::fromUtf8(f.readAll()) : QString();
}

}  // namespace

PeerInvites::PeerInvites(QString archipelago, QWidget* parent)
    : QWidget(parent), archipelago_(std::move(archipelago)) {
    run_label_ = new QLabel;
    run_label_->setWordWrap(true);
    name_ = new QLineEdit;
    name_->setObjectName("peer_name");
    name_->setPlaceholderText("alice-4090");
    name_->setValidator(
        new QRegularExpressionValidator(QRegularExpression("[A-Za-z0-9._-]{1,64}"), name_));
    public_key_ = new QLineEdit;
    public_key_->setObjectName("peer_public_key");
    public_key_->setPlaceholderText(
        "optional: the peer's public key (.pub); empty makes a key pair here");
    add_ = new QPushButton("Add peer");
    add_->setObjectName("add_peer");
    invite_ = new QPlainTextEdit;
    invite_->setObjectName("invite_text");
    invite_->setReadOnly(true);
    invite_->setFont(QFontDatabase::systemFont(QFontDatabase::FixedFont));
    invite_->setMaximumHeight(90);
    copy_ = new QPushButton("Copy invite");
    copy_->setEnabled(false);
    note_ = new QLabel;
    note_->setWordWrap(true);
    invited_ = new QTableWidget(0, 2);
    invited_->setObjectName("invited_peers");
    invited_->setHorizontalHeaderLabels({"invited peer", "state"});
    invited_->horizontalHeader()->setStretchLastSection(true);
    invited_->verticalHeader()->hide();
    invited_->setEditTriggers(QAbstractItemView::NoEditTriggers);

    auto* form = new QFormLayout;
    form->addRow("Peer name", name_);
    form->addRow("Peer public key", public_key_);
    auto* buttons = new QHBoxLayout;
    buttons->addWidget(add_);
    buttons->addWidget(copy_);
    buttons->addStretch();
    auto* box = new QVBoxLayout(this);
    box->addWidget(run_label_);
    box->addLayout(form);
    box->addLayout(buttons);
    box->addWidget(invite_);
    box->addWidget(note_);
    box->addWidget(invited_, 1);

    connect(add_, &QPushButton::clicked, this,
            [this] { add_peer(name_->text(), public_key_->text().trimmed()); });
    connect(copy_, &QPushButton::clicked, this,
            [this] { QApplication::clipboard()->setText(invite_->toPlainText()); });
    set_run_toml({});
}

void PeerInvites::set_run_toml(const QString& path) {
    run_toml_ = path;
    const bool have = !path.isEmpty();
    add_->setEnabled(have);
    run_label_->setText(
        have ? QString("Invites for the run in %1").arg(QFileInfo(path).absolutePath())
             : QString("Host a run from this app to invite peers here (invites need its "
                       "run.toml; `archipelago invite` does the same from a shell)."));
    reload_invited();
}

QString PeerInvites::peers_dir() const {
    return QFileInfo(run_toml_).absolutePath() + "/peers";
}

QString PeerInvites::invite_text() const {
    return invite_->toPlainText();
}

void PeerInvites::run_step(const QString& name, const QStringList& args,
                           std::function<void()> next) {
    auto* p = new QProcess(this);
    p->setProgram(archipelago_);
    p->setArguments(args);
    connect(p, &QProcess::finished, this,
            [this, p, name, next](int code, QProcess::ExitStatus status) {
                p->deleteLater();
                if (status == QProcess::NormalExit && code == 0) {
                    next();
                    return;
                }
                const QString err = QString::fromUtf8(p->readAllStandardError()).trimmed();
                add_->setEnabled(true);
                note_->setText("error: " + err);
                emit invite_failed(name, err);
            });
    connect(p, &QProcess::errorOccurred, this, [this, p, name](QProcess::ProcessError e) {
        if (e != QProcess::FailedToStart) return;
        p->deleteLater();
        add_->setEnabled(true);
        const QString err = QString("could not run '%1': %2").arg(archipelago_, p->errorString());
        note_->setText("error: " + err);
        emit invite_failed(name, err);
    });
    p->start();
}

void PeerInvites::add_peer(const QString& name, const QString& public_key_text) {
    if (run_toml_.isEmpty() || name.isEmpty()) return;
    QDir().mkpath(peers_dir());
    const QString key = peers_dir() + "/" + name + ".key";
    const QString pub = key + ".pub";
    const QString invite = peers_dir() + "/" + name + ".invite";
    add_->setEnabled(false);
    note_->setText(QString("inviting %1...").arg(name));
    auto make_invite = [this, name, pub, invite, key, public_key_text] {
        run_step(
            name,
            {"invite", "--config", run_toml_, "--peer-key", pub, "--name", name, "--out", invite},
            [this, name, invite, key, public_key_text] {
                finish_invite(name, invite, public_key_text.isEmpty() ? key : QString());
            });
    };
    if (!public_key_text.isEmpty()) {
        QFile f(pub);
        if (!f.open(QIODevice::WriteOnly | QIODevice::Truncate) ||
            f.write((public_key_text + "\n").toUtf8()) < 0) {
            add_->setEnabled(true);
            note_->setText(QString("error: could not write %1").arg(pub));
            emit invite_failed(name, note_->text());
            return;
        }
        f.close();
        make_invite();
    } else {
        run_step(name, {"keygen", "--out", key}, make_invite);
    }
}

void PeerInvites::finish_invite(const QString& name, const QString& invite_path,
                                const QString& key_path) {
    add_->setEnabled(true);
    invite_->setPlainText(read_text(invite_path));
    copy_->setEnabled(true);
    note_->setText(
        key_path.isEmpty()
            ? QString("Send %1 this invite (%2).").arg(name, invite_path)
            : QString("Send %1 this invite (%2) and, over a private channel, the secret key %3.")
                  .arg(name, invite_path, key_path));
    reload_invited();
    emit invite_made(name, invite_path);
}

void PeerInvites::reload_invited() {
    invited_->setRowCount(0);
    if (run_toml_.isEmpty()) return;
    const QStringList files = QDir(peers_dir()).entryList({"*.invite"}, QDir::Files, QDir::Name);
    for (const QString& f : files) {
        const int row = invited_->rowCount();
        invited_->insertRow(row);
        invited_->setItem(row, 0, new QTableWidgetItem(QFileInfo(f).completeBaseName()));
        invited_->setItem(row, 1, new QTableWidgetItem("invited"));
    }
}

void PeerInvites::update_peers(const QList<PeerInfo>& peers) {
    for (int row = 0; row < invited_->rowCount(); ++row) {
        const QString name = invited_->item(row, 0)->text();
        QString state = "invited";
        for (const PeerInfo& p : peers)
            if (p.name == name)
                state = p.connected ? QString("admitted, island %1").arg(p.island)
                                    : "admitted, offline";
        invited_->item(row, 1)->setText(state);
    }
}

}  // namespace arch::gui
