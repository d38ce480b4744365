// gui/peer_invites.cpp: PeerInvites. A running host reads its allow-list when it starts, so the
// panel says that a peer added during a run is admitted from the host's next start; the invites
// made by the Host wizard before hosting are admitted at once.
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

namespace arch::gui {
namespace {

QString read_text(const QString& path) {
    QFile f(path);
    return f.open(QIODevice::ReadOnly) ? QString::fromUtf8(f.readAll()) : QString();
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
    maker_->make(run_toml_, name, public_key_text);
}

void PeerInvites::finish_invite(const QString& name, const QString& invite_path,
                                const QString& key_path) {
    add_->setEnabled(true);
    reload_invited();
    show_invite(name);
    note_->setText(note_->text() +
                   "\nA running host reads its allow-list when it starts: this peer is admitted "
                   "from the host's next start.");
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
