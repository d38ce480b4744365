// gui/host_wizard.h: "Host a run": a QWizard over model, data, training, wire, peers and the run
// folder. Finishing writes <run folder>/run.toml, makes each peer's invite (InviteMaker: the host
// admits only keys on its allow-list, read when it starts), then posts the config to /api/host.
#pragma once

#include <QWizard>

#include "gui/run_toml.h"

class QComboBox;
class QLabel;
class QLineEdit;
class QPlainTextEdit;
class QRadioButton;
class QSpinBox;

namespace arch::gui {

class DaemonClient;
class InviteMaker;

class HostWizard : public QWizard {
    Q_OBJECT
  public:
    // runs_dir: the folder under which the run folder <runs_dir>/<run name> is proposed.
    HostWizard(DaemonClient* client, QString archipelago, QString runs_dir,
               QWidget* parent = nullptr);

    HostRunSettings settings() const;  // what the pages hold now
    QStringList peer_names() const;
    QString run_toml_path() const;  // where accept() wrote run.toml (empty before)
    void accept() override;         // async: closes once the invites are made and /api/host posted

  signals:
    // After run.toml is written and /api/host is posted.
    void run_hosted(const QString& run_toml_path);

  private:
    QWizardPage* model_page();
    QWizardPage* data_page();
    QWizardPage* training_page();
    QWizardPage* wire_page();
    QWizardPage* peers_page();
    QWizardPage* summary_page();
    void refresh_summary();
    void invite_next(QStringList names);  // then post /api/host
    void failed(const QString& error);
    void offer_codecs_for_mode();  // streaming mode: the codecs with error feedback greyed out

    DaemonClient* client_;
    InviteMaker* maker_;
    QString runs_dir_;
    QString written_, toml_text_;
    QLineEdit* name_ = nullptr;
    QComboBox* preset_ = nullptr;
    QLineEdit* init_hf_ = nullptr;
    QRadioButton* bundled_ = nullptr;
    QRadioButton* shards_ = nullptr;
    QLineEdit* train_ = nullptr;
    QLineEdit* val_ = nullptr;
    QSpinBox* rounds_ = nullptr;
    QSpinBox* steps_ = nullptr;
    QSpinBox* islands_ = nullptr;
    QComboBox* mode_ = nullptr;
    QComboBox* codec_ = nullptr;
    QLineEdit* bind_ = nullptr;
    QComboBox* nat_ = nullptr;
    QPlainTextEdit* peers_ = nullptr;
    QLineEdit* run_dir_ = nullptr;
    QPlainTextEdit* preview_ = nullptr;
    QLabel* error_ = nullptr;
};

}  // namespace arch::gui
