// gui/invite_maker.h: makes one peer's invite on the host side by running the CLI through QProcess
// (async): `archipelago keygen` for a key pair (unless the peer's public key is given), then
// `archipelago invite`, which adds the key to the run's allow-list. Files: <run>/peers/NAME.*
#pragma once

#include <QObject>
#include <QStringList>
#include <functional>

namespace arch::gui {

class InviteMaker : public QObject {
    Q_OBJECT
  public:
    InviteMaker(QString archipelago, QObject* parent = nullptr);

    // run_toml: the run's config (its checkpoint_dir holds the allow-list). public_key_text empty:
    // make a key pair in <run>/peers (the peer then needs the secret key file too).
    void make(const QString& run_toml, const QString& name, const QString& public_key_text = {});
    bool busy() const { return busy_; }
    // Only the key pair <run>/peers/NAME.key(.pub), for an invite made through the control API.
    void make_key(const QString& run_toml, const QString& name);

    static QString peers_dir(const QString& run_toml);
    static QString invite_path(const QString& run_toml, const QString& name);

  signals:
    // key_path: the secret key made here, or empty when the peer's public key was given.
    void made(const QString& name, const QString& invite_path, const QString& key_path);
    void failed(const QString& name, const QString& error);
    void key_made(const QString& name, const QString& key_path);

  private:
    void run_step(const QString& name, const QStringList& args, std::function<void()> next);
    void fail(const QString& name, const QString& error);

    QString archipelago_;
    bool busy_ = false;
};

}  // namespace arch::gui
