// gui/peer_invites.cpp: PeerInvites. Before a run is hosted, invites are made with the CLI
// (InviteMaker); while the daemon hosts it, through its control API, which the running host picks
// up within a second (docs/net.md, "Membership while the run goes on"). Either way the invite file
// lands in <run>/peers/NAME.invite, which is what the list shows.
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
#include <QPushButton>
#include <QRegularExpressionValidator>
#include <QTableWidget>
#include <QVBoxLayout>

#include <utility>

namespace arch::gui {
namespace {

QString read_text(const QString& path) {
    QFile f(path);
    return f.open(QIODevice::ReadOnly) ? QString::fromUtf8(f.readAll()) : QString();
}

// The Z85 key in a .pub file's text (public-key = '...'), or the text itself (a bare key).
QString z85_of(const QString& text) {
    const QRegularExpressionMatch m = QRegularExpression("'([^']+)'").match(text);
    return m.hasMatch() ? m.captured(1) : text.trimmed();
}

}  // namespace

PeerInvites::PeerInvites(QString archipelago, QWidget* parent)
    : QWidget(parent), maker_(new InviteMaker(std::move(archipelago), this)) {
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
    invited_ = new QTableWidget(0, 3);
    invited_->setObjectName("invited_peers");
    invited_->setHorizontalHeaderLabels({"invited peer", "state", ""});
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
    connect(maker_, &InviteMaker::made, this, &PeerInvites::finish_invite);
    connect(maker_, &InviteMaker::failed, this, [this](const QString& name, const QString& error) {
        add_->setEnabled(true);
        note_->setText("error: " + error);
        emit invite_failed(name, error);
    });
    connect(invited_, &QTableWidget::cellClicked, this,
            [this](int row, int) { show_invite(invited_->item(row, 0)->text()); });
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

QString PeerInvites::invite_text() const {
    return invite_->toPlainText();
}

void PeerInvites::add_peer(const QString& name, const QString& public_key_text) {
    if (run_toml_.isEmpty() || name.isEmpty() || maker_->busy()) return;
    add_->setEnabled(false);
    note_->setText(QString("inviting %1...").arg(name));
    if (hosting_ && client_) return invite_through_daemon(name, public_key_text);
    maker_->make(run_toml_, name, public_key_text);
}

void PeerInvites::set_daemon(DaemonClient* client) {
    client_ = client;
    connect(client_, &DaemonClient::invite_received, this, &PeerInvites::finish_daemon_invite);
    connect(client_, &DaemonClient::command_finished, this,
            [this](const QString& path, bool ok, const QString& error) {
                if (path == "/api/revoke" && !revoking_.isEmpty()) {
                    const QString name = std::exchange(revoking_, QString());
                    if (ok) mark_revoked(name);
                    note_->setText(ok ? QString("Revoked %1: the host has cut it off.").arg(name)
                                      : "error: " + error);
                } else if (path == "/api/invite" && !ok) {
                    add_->setEnabled(true);
                    note_->setText("error: " + error);
                    emit invite_failed(name_->text(), error);
                }
            });
    connect(maker_, &InviteMaker::key_made, this, [this](const QString& name, const QString& key) {
        client_->invite(name, z85_of(read_text(key + ".pub")));
    });
}

void PeerInvites::set_hosting(bool hosting) {
    if (hosting == hosting_) return;
    hosting_ = hosting;
    if (!hosting) revoked_.clear();  // a new run starts with everyone listed
    reload_invited();
}

void PeerInvites::invite_through_daemon(const QString& name, const QString& public_key_text) {
    if (public_key_text.isEmpty()) return maker_->make_key(run_toml_, name);  // then key_made
    client_->invite(name, z85_of(public_key_text));
}

void PeerInvites::finish_daemon_invite(const QString& name, const QString& invite_text) {
    QDir().mkpath(InviteMaker::peers_dir(run_toml_));
    const QString path = InviteMaker::invite_path(run_toml_, name);
    QFile f(path);
    if (!f.open(QIODevice::WriteOnly | QIODevice::Truncate) || f.write(invite_text.toUtf8()) < 0) {
        add_->setEnabled(true);
        note_->setText(QString("error: could not write %1").arg(path));
        return emit invite_failed(name, note_->text());
    }
    f.close();
    revoked_.removeAll(name);
    add_->setEnabled(true);
    reload_invited();
    show_invite(name);
    note_->setText(note_->text() + "\nThe running host admits this peer as soon as it connects.");
    emit invite_made(name, path);
}

void PeerInvites::revoke(const QString& name) {
    if (!client_ || !hosting_ || !revoking_.isEmpty()) return;
    revoking_ = name;
    note_->setText(QString("revoking %1...").arg(name));
    client_->revoke(name);
}

void PeerInvites::mark_revoked(const QString& name) {
    if (!revoked_.contains(name)) revoked_.append(name);
    for (int row = 0; row < invited_->rowCount(); ++row) {
        if (invited_->item(row, 0)->text() != name) continue;
        invited_->item(row, 1)->setText("revoked");
        if (QWidget* button = invited_->cellWidget(row, 2)) button->setEnabled(false);
    }
}

void PeerInvites::finish_invite(const QString& name, const QString& invite_path,
                                const QString& key_path) {
    add_->setEnabled(true);
    reload_invited();
    show_invite(name);
    note_->setText(note_->text() + "\nA running host admits this peer within a second of the invite.");
    emit invite_made(name, invite_path);
}

void PeerInvites::show_invite(const QString& name) {
    const QString path = InviteMaker::invite_path(run_toml_, name);
    const QString key = InviteMaker::peers_dir(run_toml_) + "/" + name + ".key";
    invite_->setPlainText(read_text(path));
    copy_->setEnabled(!invite_->toPlainText().isEmpty());
    note_->setText(QFile::exists(key)
                       ? QString("Send %1 this invite (%2) and, over a private channel, "
                                 "the secret key %3.")
                             .arg(name, path, key)
                       : QString("Send %1 this invite (%2).").arg(name, path));
}

void PeerInvites::reload_invited() {
    invited_->setRowCount(0);
    if (run_toml_.isEmpty()) return;
    const QStringList files =
        QDir(InviteMaker::peers_dir(run_toml_)).entryList({"*.invite"}, QDir::Files, QDir::Name);
    for (const QString& f : files) {
        const int row = invited_->rowCount();
        invited_->insertRow(row);
        invited_->setItem(row, 0, new QTableWidgetItem(QFileInfo(f).completeBaseName()));
        invited_->setItem(row, 1, new QTableWidgetItem("invited"));
        const QString name = QFileInfo(f).completeBaseName();
        auto* button = new QPushButton("Revoke");
        button->setObjectName("revoke_" + name);
        button->setEnabled(hosting_ && client_);
        connect(button, &QPushButton::clicked, this, [this, name] { revoke(name); });
        invited_->setCellWidget(row, 2, button);
        if (revoked_.contains(name)) mark_revoked(name);
    }
}

void PeerInvites::update_peers(const QList<PeerInfo>& peers) {
    for (int row = 0; row < invited_->rowCount(); ++row) {
        const QString name = invited_->item(row, 0)->text();
        QString state = "invited";
        if (revoked_.contains(name)) continue;  // it may still be listed by the host, offline
        for (const PeerInfo& p : peers)
            if (p.name == name)
                state = p.connected ? QString("admitted, island %1").arg(p.island)
                                    : "admitted, offline";
        invited_->item(row, 1)->setText(state);
    }
}

}  // namespace arch::gui
