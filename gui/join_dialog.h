// gui/join_dialog.h: "Join a run": paste or open an invite, choose a key file or generate one
// (`archipelago keygen`, async), then post /api/join {"invite": text, "key": path}.
// A generated key's public half is shown so the user can send it to the host, who invites it.
#pragma once

#include <QDialog>

class QLabel;
class QLineEdit;
class QPlainTextEdit;
class QPushButton;

namespace arch::gui {

class DaemonClient;

class JoinDialog : public QDialog {
    Q_OBJECT
  public:
    JoinDialog(DaemonClient* client, QString archipelago, QString keys_dir,
               QWidget* parent = nullptr);

    void set_invite_text(const QString& text);
    void set_key_path(const QString& path);
    void generate_key(const QString& name);  // async: keys_dir/NAME.key
    void accept() override;                  // posts /api/join when both are given

  signals:
    void key_generated(const QString& key_path, const QString& public_key);

  private:
    DaemonClient* client_;
    QString archipelago_, keys_dir_;
    QPlainTextEdit* invite_;
    QLineEdit* key_;
    QLineEdit* key_name_;
    QPushButton* generate_;
    QLabel* note_;
};

}  // namespace arch::gui
