// gui/start_screen.cpp: StartScreen's layout: a title, two large buttons with one line each on
// what they do, and the daemon line. No logic beyond forwarding clicks.
#include "gui/start_screen.h"

#include <QLabel>
#include <QPushButton>
#include <QVBoxLayout>

namespace arch::gui {
namespace {

QPushButton* big_button(const QString& text, const char* name) {
    auto* b = new QPushButton(text);
    b->setObjectName(name);
    b->setMinimumSize(320, 64);
    QFont f = b->font();
    f.setPointSizeF(f.pointSizeF() * 1.4);
    b->setFont(f);
    return b;
}

}  // namespace

StartScreen::StartScreen(QWidget* parent) : QWidget(parent) {
    auto* title = new QLabel(
        "<h1>Archipelago</h1><p>Train a language model together across far-apart "
        "GPUs: each island trains on its own, and only a compressed update "
        "travels every few minutes.</p>");
    title->setWordWrap(true);
    title->setAlignment(Qt::AlignCenter);
    auto* host = big_button("Host a run", "host_button");
    auto* join = big_button("Join a run", "join_button");
    auto* watch = new QPushButton("Watch the current run");
    watch->setObjectName("watch_button");
    auto* host_note =
        new QLabel("Choose a model, data and compression; invite the peers who bring GPUs.");
    auto* join_note = new QLabel("Paste the invite a host sent you; your GPUs become one island.");
    daemon_ = new QLabel;
    daemon_->setObjectName("daemon_line");
    daemon_->setWordWrap(true);
    daemon_->setAlignment(Qt::AlignCenter);

    auto* box = new QVBoxLayout(this);
    box->addStretch();
    box->addWidget(title);
    box->addSpacing(24);
    box->addWidget(host, 0, Qt::AlignCenter);
    box->addWidget(host_note, 0, Qt::AlignCenter);
    box->addSpacing(12);
    box->addWidget(join, 0, Qt::AlignCenter);
    box->addWidget(join_note, 0, Qt::AlignCenter);
    box->addSpacing(12);
    box->addWidget(watch, 0, Qt::AlignCenter);
    box->addStretch();
    box->addWidget(daemon_);

    connect(host, &QPushButton::clicked, this, &StartScreen::host_clicked);
    connect(join, &QPushButton::clicked, this, &StartScreen::join_clicked);
    connect(watch, &QPushButton::clicked, this, &StartScreen::watch_clicked);
}

void StartScreen::set_daemon_text(const QString& text, bool ok) {
    daemon_->setText(text);
    daemon_->setStyleSheet(ok ? "color: #2e7d32" : "color: #b00020; font-weight: bold");
}

}  // namespace arch::gui
