// gui/host_wizard.h: "Host a run": a QWizard over model, data, training, wire and a summary page.
// Finishing it writes <run folder>/run.toml and posts its text to the daemon (/api/host); the run
// folder is also the run's checkpoint_dir, where `archipelago invite` keeps the host's key.
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

class HostWizard : public QWizard {
    Q_OBJECT
  public:
    // runs_dir: the folder under which the run folder <runs_dir>/<run name> is proposed.
    HostWizard(DaemonClient* client, QString runs_dir, QWidget* parent = nullptr);

    HostRunSettings settings() const;  // what the pages hold now
    QString run_toml_path() const;     // where accept() wrote run.toml (empty before)
    void accept() override;

  signals:
    // After run.toml is written and /api/host is posted.
    void run_hosted(const QString& run_toml_path);

  private:
    QWizardPage* model_page();
    QWizardPage* data_page();
    QWizardPage* training_page();
    QWizardPage* wire_page();
    QWizardPage* summary_page();
    void refresh_summary();

    DaemonClient* client_;
    QString runs_dir_;
    QString written_;
    QLineEdit* name_ = nullptr;
    QComboBox* preset_ = nullptr;
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
    QLineEdit* run_dir_ = nullptr;
    QPlainTextEdit* preview_ = nullptr;
    QLabel* error_ = nullptr;
};

}  // namespace arch::gui
