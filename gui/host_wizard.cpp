// gui/host_wizard.cpp: HostWizard's pages and accept(). Every input widget has an objectName
// (run_name, preset, data_bundled, data_shards, train_data, val_data, rounds, steps_per_round,
// islands, mode, codec, bind, peer_names, run_dir) so tests can fill the pages as a person would.
#include "gui/host_wizard.h"

#include <QAbstractButton>
#include <QComboBox>
#include <QDir>
#include <QFile>
#include <QFormLayout>
#include <QLabel>
#include <QLineEdit>
#include <QPlainTextEdit>
#include <QRadioButton>
#include <QRegularExpressionValidator>
#include <QSaveFile>
#include <QSpinBox>
#include <QStandardItemModel>
#include <QVBoxLayout>
#include <algorithm>
#include <functional>

#include "gui/daemon_client.h"
#include "gui/invite_maker.h"

namespace arch::gui {
namespace {

// A page whose completeness is a predicate over its widgets.
class CheckedPage : public QWizardPage {
  public:
    std::function<bool()> complete = [] { return true; };
    bool isComplete() const override { return complete(); }
    void changed() { emit completeChanged(); }
};

QSpinBox* spin(const char* name, int lo, int hi, int value) {
    auto* s = new QSpinBox;
    s->setObjectName(name);
    s->setRange(lo, hi);
    s->setValue(value);
    return s;
}

}  // namespace

HostWizard::HostWizard(DaemonClient* client, QString archipelago, QString runs_dir, QWidget* parent)
    : QWizard(parent),
      client_(client),
      maker_(new InviteMaker(std::move(archipelago), this)),
      runs_dir_(std::move(runs_dir)) {
    setWindowTitle("Host a run");
    setOption(QWizard::NoBackButtonOnStartPage);
    addPage(model_page());
    addPage(data_page());
    addPage(training_page());
    addPage(wire_page());
    addPage(peers_page());
    addPage(summary_page());
    // Streaming mode takes no error feedback (docs/rounds.md): the wire page offers only what the host takes.
    connect(mode_, &QComboBox::currentIndexChanged, this, &HostWizard::offer_codecs_for_mode);
}

void HostWizard::offer_codecs_for_mode() {
    const bool streaming = mode_->currentData().toString() == "streaming";
    auto* items = qobject_cast<QStandardItemModel*>(codec_->model());
    for (int i = 0; i < codec_->count(); ++i)
        items->item(i)->setEnabled(!streaming || !codec_->itemData(i).toString().contains("+ef"));
    if (!items->item(codec_->currentIndex())->isEnabled()) codec_->setCurrentIndex(codec_->findData("int8:block=256+zstd:1"));
}

QWizardPage* HostWizard::model_page() {
    auto* page = new CheckedPage;
    page->setTitle("Model");
    page->setSubTitle(
        "Every island trains this model (GPT-2 or Llama family); larger models need more memory and time per step. "
        "The host makes θ and sends it to every peer.");
    name_ = new QLineEdit("my-run");
    name_->setObjectName("run_name");
    name_->setValidator(
        new QRegularExpressionValidator(QRegularExpression("[A-Za-z0-9._-]{1,64}"), name_));
    preset_ = new QComboBox;
    preset_->setObjectName("preset");
    preset_->addItem("tiny (L4 C128, seconds per round on a CPU)", "tiny");
    preset_->addItem("small (L6 C384)", "small");
    preset_->addItem("gpt2-124m (L12 C768, wants GPUs)", "gpt2-124m");
    preset_->addItem("llama-tiny (Llama family, L4 C128, seconds per round on a CPU)", "llama-tiny");
    preset_->addItem("smollm-135m (SmolLM2-135M's shape, wants GPUs)", "smollm-135m");
    preset_->addItem("smollm-360m (SmolLM2-360M's shape, wants GPUs)", "smollm-360m");
    init_hf_ = new QLineEdit;
    init_hf_->setObjectName("init_hf");
    init_hf_->setPlaceholderText("optional: a Hugging Face model folder on this machine, of the preset's shape");
    auto* form = new QFormLayout(page);
    form->addRow("Run name", name_);
    form->addRow("Model preset", preset_);
    form->addRow("Start from (model.init_hf)", init_hf_);
    page->complete = [this] { return name_->hasAcceptableInput(); };
    connect(name_, &QLineEdit::textChanged, page, &CheckedPage::changed);
    return page;
}

QWizardPage* HostWizard::data_page() {
    auto* page = new CheckedPage;
    page->setTitle("Data");
    page->setSubTitle(
        "The host serves the data: it deals the training set to the islands in interleaved chunks and sends each "
        "peer the chunks it lacks. A peer with its own copy (archipelago peer --data) uses it, matched by hash.");
    bundled_ = new QRadioButton("The bundled corpus (King James Bible: the host prepares it and serves it)");
    bundled_->setObjectName("data_bundled");
    bundled_->setChecked(true);
    shards_ = new QRadioButton(
        "llm.c token shards on this machine (the host serves them: peers need no copy)");
    shards_->setObjectName("data_shards");
    train_ = new QLineEdit;
    train_->setObjectName("train_data");
    train_->setPlaceholderText("/data/fineweb/fineweb_train_*.bin");
    val_ = new QLineEdit;
    val_->setObjectName("val_data");
    val_->setPlaceholderText("/data/fineweb/fineweb_val_*.bin (optional)");
    auto* form = new QFormLayout;
    form->addRow("Train shards", train_);
    form->addRow("Validation shards", val_);
    auto* box = new QVBoxLayout(page);
    box->addWidget(bundled_);
    box->addWidget(shards_);
    box->addLayout(form);
    auto sync = [this, page] {
        train_->setEnabled(shards_->isChecked());
        val_->setEnabled(shards_->isChecked());
        page->changed();
    };
    sync();
    connect(shards_, &QRadioButton::toggled, page, sync);
    connect(train_, &QLineEdit::textChanged, page, &CheckedPage::changed);
    page->complete = [this] {
        return bundled_->isChecked() || !train_->text().trimmed().isEmpty();
    };
    return page;
}

QWizardPage* HostWizard::training_page() {
    auto* page = new QWizardPage;
    page->setTitle("Training");
    page->setSubTitle("Islands exchange a pseudo-gradient every H inner steps (one round).");
    rounds_ = spin("rounds", 1, 1000000, 20);
    steps_ = spin("steps_per_round", 1, 100000, 50);
    islands_ = spin("islands", 1, 1024, 2);
    mode_ = new QComboBox;
    mode_->setObjectName("mode");
    mode_->addItem("sync (every round waits for all islands)", "sync");
    mode_->addItem("async (Delayed Nesterov, for islands of unequal speed)", "async");
    mode_->addItem("streaming (one fragment of the model per sync, fewer bytes at once; codecs without error feedback)",
                   "streaming");
    mode_->addItem("overlap (islands train the next round while the last sync travels, for slow links)", "overlap");
    auto* form = new QFormLayout(page);
    form->addRow("Rounds", rounds_);
    form->addRow("Inner steps per round (H)", steps_);
    form->addRow("Islands expected", islands_);
    form->addRow("Mode", mode_);
    return page;
}

QWizardPage* HostWizard::wire_page() {
    auto* page = new QWizardPage;
    page->setTitle("Wire");
    page->setSubTitle(
        "How pseudo-gradients are compressed, where the host listens, and how peers outside your network reach it "
        "(docs/net.md, \"Hosting from home\").");
    codec_ = new QComboBox;
    codec_->setObjectName("codec");
    for (const CodecChoice& c : kCodecChoices) codec_->addItem(c.label, QString(c.spec));
    codec_->setCurrentIndex(1);
    bind_ = new QLineEdit("tcp://0.0.0.0:5555");
    bind_->setObjectName("bind");
    nat_ = new QComboBox;
    nat_->setObjectName("nat");
    nat_->addItem("auto: ask the router to forward the port (UPnP, then NAT-PMP); go on without", "auto");
    nat_->addItem("UPnP only, and stop the host if the router does not forward the port", "upnp");
    nat_->addItem("NAT-PMP only, and stop the host if the router does not forward the port", "natpmp");
    nat_->addItem("off: I forward the port myself, or every peer is on this network", "off");
    auto* form = new QFormLayout(page);
    form->addRow("Codec", codec_);
    form->addRow("Host listens on (every address of this machine)", bind_);
    form->addRow("Router port mapping (run.nat)", nat_);
    return page;
}

const QRegularExpression kPeerName("^[A-Za-z0-9._-]{1,64}$");

QWizardPage* HostWizard::peers_page() {
    auto* page = new CheckedPage;
    page->setTitle("Peers");
    page->setSubTitle(
        "One name per line. Each peer gets a key pair and an invite in <run folder>/peers; the "
        "host admits only these keys (its allow-list is read when the run starts).");
    peers_ = new QPlainTextEdit("peer-1\npeer-2");
    peers_->setObjectName("peer_names");
    auto* box = new QVBoxLayout(page);
    box->addWidget(peers_);
    connect(peers_, &QPlainTextEdit::textChanged, page, &CheckedPage::changed);
    page->complete = [this] {
        const QStringList names = peer_names();
        return !names.isEmpty() && std::all_of(names.begin(), names.end(), [](const QString& n) {
            return kPeerName.match(n).hasMatch();
        });
    };
    return page;
}

QStringList HostWizard::peer_names() const {
    QStringList names;
    for (const QString& line : peers_->toPlainText().split('\n', Qt::SkipEmptyParts))
        if (!line.trimmed().isEmpty() && !names.contains(line.trimmed())) names << line.trimmed();
    return names;
}

QWizardPage* HostWizard::summary_page() {
    auto* page = new CheckedPage;
    page->setTitle("Run folder");
    page->setSubTitle(
        "run.toml, the host key, the allow-list and checkpoints go into this folder.");
    run_dir_ = new QLineEdit;
    run_dir_->setObjectName("run_dir");
    preview_ = new QPlainTextEdit;
    preview_->setObjectName("preview");
    preview_->setReadOnly(true);
    error_ = new QLabel;
    error_->setObjectName("error");
    error_->setStyleSheet("color: #b00020");
    error_->setWordWrap(true);
    auto* form = new QFormLayout(page);
    form->addRow("Run folder", run_dir_);
    form->addRow("run.toml", preview_);
    form->addRow(error_);
    connect(run_dir_, &QLineEdit::textChanged, this, &HostWizard::refresh_summary);
    connect(run_dir_, &QLineEdit::textChanged, page, &CheckedPage::changed);
    page->complete = [this] { return !run_dir_->text().trimmed().isEmpty(); };
    connect(this, &QWizard::currentIdChanged, this, [this, page](int) {
        if (currentPage() != page) return;
        if (run_dir_->text().isEmpty() || !run_dir_->isModified())
            run_dir_->setText(QDir(runs_dir_).absoluteFilePath(name_->text()));
        refresh_summary();
    });
    return page;
}

HostRunSettings HostWizard::settings() const {
    HostRunSettings s;
    s.name = name_->text();
    s.preset = preset_->currentData().toString();
    s.init_hf = init_hf_->text().trimmed();
    if (shards_->isChecked()) {
        s.train_data = train_->text().trimmed();
        s.val_data = val_->text().trimmed();
    }
    s.rounds = rounds_->value();
    s.steps_per_round = steps_->value();
    s.islands = islands_->value();
    s.mode = mode_->currentData().toString();
    s.codec = codec_->currentData().toString();
    s.bind = bind_->text().trimmed();
    s.nat = nat_->currentData().toString();
    s.run_dir = QDir(run_dir_->text().trimmed()).absolutePath();
    return s;
}

QString HostWizard::run_toml_path() const {
    return written_;
}

void HostWizard::refresh_summary() {
    preview_->setPlainText(to_run_toml(settings()));
}

void HostWizard::accept() {
    const HostRunSettings s = settings();
    toml_text_ = to_run_toml(s);
    const QString path = s.run_dir + "/run.toml";
    QSaveFile f(path);
    if (!QDir().mkpath(s.run_dir) || !f.open(QIODevice::WriteOnly) ||
        f.write(toml_text_.toUtf8()) < 0 || !f.commit())
        return failed(QString("could not write %1: %2").arg(path, f.errorString()));
    written_ = path;
    button(QWizard::FinishButton)->setEnabled(false);
    button(QWizard::BackButton)->setEnabled(false);
    invite_next(peer_names());
}

void HostWizard::invite_next(QStringList names) {
    if (names.isEmpty()) {
        client_->host(toml_text_);
        emit run_hosted(written_);
        QWizard::accept();
        return;
    }
    const QString name = names.takeFirst();
    error_->setStyleSheet("");
    error_->setText(QString("inviting %1...").arg(name));
    disconnect(maker_, nullptr, this, nullptr);
    connect(maker_, &InviteMaker::made, this, [this, names] { invite_next(names); });
    connect(maker_, &InviteMaker::failed, this, [this](const QString& who, const QString& error) {
        failed(QString("could not invite %1: %2").arg(who, error));
    });
    maker_->make(written_, name);
}

void HostWizard::failed(const QString& error) {
    error_->setStyleSheet("color: #b00020");
    error_->setText(error);
    button(QWizard::FinishButton)->setEnabled(true);
    button(QWizard::BackButton)->setEnabled(true);
}

}  // namespace arch::gui
