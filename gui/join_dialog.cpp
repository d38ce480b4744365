// gui/join_dialog.cpp: JoinDialog. It checks only that an invite and a key file are given; the
// daemon validates the invite (host key, endpoint, run id) and answers {"error": ...} otherwise,
// which the main window shows.
#include "gui/join_dialog.h"

#include <QDialogButtonBox>
#include <QDir>
#include <QFile>
#include <QFileDialog>
#include <QFileInfo>
#include <QFontDatabase>
#include <QFormLayout>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QPlainTextEdit>
#include <QProcess>
#include <QPushButton>
#include <QVBoxLayout>

#include "gui/daemon_client.h"

namespace arch::gui {

JoinDialog::JoinDialog(DaemonClient* client, QString archipelago, QString keys_dir, QWidget* parent)
    : QDialog(parent),
      client_(client),
      archipelago_(std::move(archipelago)),
      keys_dir_(std::move(keys_dir)) {
    setWindowTitle("Join a run");
    invite_ = new QPlainTextEdit;
    invite_->setObjectName("invite_text");
    invite_->setFont(QFontDatabase::systemFont(QFontDatabase::FixedFont));
    invite_->setPlaceholderText("paste the invite the host sent you, or open its file");
    auto* open = new QPushButton("Open invite file...");
    key_ = new QLineEdit;
    key_->setObjectName("key_path");
    key_->setPlaceholderText("your secret key file (from the host, or generated here)");
    auto* browse = new QPushButton("Choose...");
    key_name_ = new QLineEdit("my-island");
    key_name_->setObjectName("key_name");
    generate_ = new QPushButton("Generate a key");
    note_ = new QLabel;
    note_->setObjectName("note");
    note_->setWordWrap(true);
    note_->setTextInteractionFlags(Qt::TextSelectableByMouse);
    auto* buttons = new QDialogButtonBox(QDialogButtonBox::Ok | QDialogButtonBox::Cancel);
    buttons->button(QDialogButtonBox::Ok)->setText("Join");

    auto* key_row = new QHBoxLayout;
    key_row->addWidget(key_, 1);
    key_row->addWidget(browse);
    auto* gen_row = new QHBoxLayout;
    gen_row->addWidget(key_name_, 1);
    gen_row->addWidget(generate_);
    auto* form = new QFormLayout;
    form->addRow("Invite", invite_);
    form->addRow("", open);
    form->addRow("Key", key_row);
    form->addRow("New key named", gen_row);
    auto* box = new QVBoxLayout(this);
    box->addLayout(form);
    box->addWidget(note_);
    box->addWidget(buttons);

    connect(open, &QPushButton::clicked, this, [this] {
        const QString path = QFileDialog::getOpenFileName(this, "Open invite", QString(),
                                                          "Invites (*.invite);;All files (*)");
        QFile f(path);
        if (!path.isEmpty() && f.open(QIODevice::ReadOnly))
            set_invite_text(QString::fromUtf8(f.readAll()));
    });
    connect(browse, &QPushButton::clicked, this, [this] {
        const QString path = QFileDialog::getOpenFileName(this, "Choose your key", keys_dir_,
                                                          "Keys (*.key);;All files (*)");
        if (!path.isEmpty()) set_key_path(path);
    });
    connect(generate_, &QPushButton::clicked, this,
            [this] { generate_key(key_name_->text().trimmed()); });
    connect(buttons, &QDialogButtonBox::accepted, this, &JoinDialog::accept);
    connect(buttons, &QDialogButtonBox::rejected, this, &JoinDialog::reject);
}

void JoinDialog::set_invite_text(const QString& text) {
    invite_->setPlainText(text);
}
void JoinDialog::set_key_path(const QString& path) {
    key_->setText(path);
}

void JoinDialog::generate_key(const QString& name) {
    if (name.isEmpty()) return;
    QDir().mkpath(keys_dir_);
    const QString path = keys_dir_ + "/" + name + ".key";
    if (QFile::exists(path)) {
        note_->setText(QString("%1 exists already: choose it, or pick another name").arg(path));
        return;
    }
    generate_->setEnabled(false);
    auto* p = new QProcess(this);
    connect(p, &QProcess::finished, this, [this, p, path](int code, QProcess::ExitStatus status) {
        p->deleteLater();
        generate_->setEnabled(true);
        if (status != QProcess::NormalExit || code != 0) {
            note_->setText("error: " + QString::fromUtf8(p->readAllStandardError()).trimmed());
            return;
        }
        QFile pub(path + ".pub");
        const QString public_key =
            pub.open(QIODevice::ReadOnly) ? QString::fromUtf8(pub.readAll()).trimmed() : QString();
        set_key_path(path);
        note_->setText(
            QString("Send the host your public key so it can invite you:\n%1").arg(public_key));
        emit key_generated(path, public_key);
    });
    connect(p, &QProcess::errorOccurred, this, [this, p](QProcess::ProcessError e) {
        if (e != QProcess::FailedToStart) return;
        p->deleteLater();
        generate_->setEnabled(true);
        note_->setText(
            QString("error: could not run '%1': %2").arg(archipelago_, p->errorString()));
    });
    p->start(archipelago_, {"keygen", "--out", path});
}

void JoinDialog::accept() {
    const QString invite = invite_->toPlainText().trimmed();
    const QString key = key_->text().trimmed();
    if (invite.isEmpty() || key.isEmpty()) {
        note_->setText("Give the invite and your key file.");
        return;
    }
    client_->join(invite + "\n", QFileInfo(key).absoluteFilePath());
    QDialog::accept();
}

}  // namespace arch::gui
