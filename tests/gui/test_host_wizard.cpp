// tests/gui/test_host_wizard.cpp: drives "Host a run" and "Join a run" the way a person would on
// the offscreen platform: fills each wizard page by objectName, presses Next and Finish, then
// checks the run.toml written into the run folder, the invites made (fake_archipelago stands in
// for the CLI) and the JSON body FakeDaemon received.
#include <QAbstractButton>
#include <QComboBox>
#include <QJsonDocument>
#include <QJsonObject>
#include <QLabel>
#include <QLineEdit>
#include <QPlainTextEdit>
#include <QRadioButton>
#include <QSignalSpy>
#include <QSpinBox>
#include <QTemporaryDir>
#include <QtTest>

#include "gui/daemon_client.h"
#include "gui/host_wizard.h"
#include "tests/gui/wizard_pages.h"
#include "gui/join_dialog.h"
#include "tests/gui/fake_daemon.h"

using namespace arch::gui;
using namespace arch::gui::test;

namespace {

QString read_all(const QString& path) {
    QFile f(path);
    return f.open(QIODevice::ReadOnly) ? QString::fromUtf8(f.readAll()) : QString();
}

}  // namespace

class TestHostWizard : public QObject {
    Q_OBJECT
    QTemporaryDir dir_;
    const QString fake_bin_ = QCoreApplication::applicationDirPath() + "/fake_archipelago";
    QString token_file() {
        const QString path = dir_.filePath("token");
        QFile f(path);
        f.open(QIODevice::WriteOnly | QIODevice::Truncate);
        f.write("tok");
        return path;
    }

  private slots:
    void fills_pages_writes_run_toml_and_posts_it() {
        FakeDaemon fake("tok");
        QVERIFY(fake.listen());
        DaemonClient client(fake.port(), token_file());
        HostWizard wizard(&client, fake_bin_, dir_.filePath("runs"));
        QSignalSpy hosted(&wizard, &HostWizard::run_hosted);
        wizard.show();
        QVERIFY(QTest::qWaitForWindowExposed(&wizard));
        QAbstractButton* next = wizard.button(QWizard::NextButton);

        // Model
        child<QLineEdit>(&wizard, "run_name")->setText("");
        QVERIFY(!wizard.currentPage()->isComplete());  // a run needs a name
        QTest::keyClicks(child<QLineEdit>(&wizard, "run_name"), "bible-small");
        QVERIFY(wizard.currentPage()->isComplete());
        select_data(child<QComboBox>(&wizard, "preset"), "small");
        for (const char* llama : {"llama-tiny", "smollm-135m", "smollm-360m"})  // Llama presets too
            QVERIFY2(child<QComboBox>(&wizard, "preset")->findData(llama) >= 0, llama);
        QTest::keyClicks(child<QLineEdit>(&wizard, "init_hf"), "/models/small-hf");
        next->click();
        // Data: the page says what the host does now (it serves the data, interleaved)
        QVERIFY(wizard.currentPage()->subTitle().contains("The host serves the data"));
        QVERIFY(!wizard.currentPage()->subTitle().contains("contiguous"));
        // Data: shards without a train pattern cannot go on
        child<QRadioButton>(&wizard, "data_shards")->setChecked(true);
        QVERIFY(!wizard.currentPage()->isComplete());
        QTest::keyClicks(child<QLineEdit>(&wizard, "train_data"), "/data/fw/train_*.bin");
        QTest::keyClicks(child<QLineEdit>(&wizard, "val_data"), "/data/fw/val_*.bin");
        QVERIFY(wizard.currentPage()->isComplete());
        next->click();
        // Training
        child<QSpinBox>(&wizard, "rounds")->setValue(12);
        child<QSpinBox>(&wizard, "steps_per_round")->setValue(40);
        child<QSpinBox>(&wizard, "islands")->setValue(3);
        select_data(child<QComboBox>(&wizard, "mode"), "async");
        next->click();
        // Wire
        select_data(child<QComboBox>(&wizard, "codec"), "fp4+ef+zstd");
        QCOMPARE(child<QLineEdit>(&wizard, "bind")->text(), QString("tcp://0.0.0.0:5555"));  // reachable from other machines
        QCOMPARE(child<QComboBox>(&wizard, "nat")->currentData().toString(), QString("auto"));
        select_data(child<QComboBox>(&wizard, "nat"), "natpmp");
        child<QLineEdit>(&wizard, "bind")->setText("tcp://127.0.0.1:6001");
        next->click();
        // Peers: one name per line, names the CLI accepts
        auto* peers = child<QPlainTextEdit>(&wizard, "peer_names");
        peers->setPlainText("alice\nbad name");
        QVERIFY(!wizard.currentPage()->isComplete());
        peers->setPlainText("alice\n\nbob\n");
        QVERIFY(wizard.currentPage()->isComplete());
        QCOMPARE(wizard.peer_names(), QStringList({"alice", "bob"}));
        next->click();
        // Summary: the run folder defaults to <runs>/<name>; the preview is the file to be written
        QLineEdit* run_dir = child<QLineEdit>(&wizard, "run_dir");
        QCOMPARE(run_dir->text(), QDir(dir_.filePath("runs")).absoluteFilePath("bible-small"));
        const QString preview = child<QPlainTextEdit>(&wizard, "preview")->toPlainText();
        wizard.button(QWizard::FinishButton)->click();

        const QString path = dir_.filePath("runs/bible-small/run.toml");
        QTRY_COMPARE_WITH_TIMEOUT(hosted.size(), 1, 10000);  // after both invites
        QCOMPARE(wizard.run_toml_path(), path);
        QVERIFY(!wizard.isVisible());
        for (const char* name : {"alice", "bob"}) {
            QVERIFY(QFile::exists(
                dir_.filePath(QString("runs/bible-small/peers/%1.invite").arg(name))));
            QVERIFY(
                QFile::exists(dir_.filePath(QString("runs/bible-small/peers/%1.key").arg(name))));
        }
        QCOMPARE(read_all(dir_.filePath("runs/bible-small/allow_list.txt")),
                 QString("alice\nbob\n"));
        const QString toml = read_all(path);
        QCOMPARE(toml, preview);
        for (const char* line :
             {"name = \"bible-small\"", "rounds = 12", "islands = 3", "mode = \"async\"",
              "bind = \"tcp://127.0.0.1:6001\"", "nat = \"natpmp\"", "[model]\nconfig = \"small\"",
              "init_hf = \"/models/small-hf\"",
              "train = \"/data/fw/train_*.bin\"", "val = \"/data/fw/val_*.bin\"",
              "steps_per_round = 40", "codec = \"fp4+ef+zstd\""})
            QVERIFY2(toml.contains(line), line);
        QVERIFY(toml.contains("checkpoint_dir = \"" +
                              QDir(dir_.filePath("runs/bible-small")).absolutePath() + "\""));

        QTRY_COMPARE_WITH_TIMEOUT(fake.posts().size(), 1, 5000);
        const FakeRequest post = fake.posts()[0];
        QCOMPARE(post.path, QByteArray("/api/host"));
        QCOMPARE(post.authorization, QByteArray("Bearer tok"));
        QCOMPARE(QJsonDocument::fromJson(post.body).object()["config"].toString(), toml);
    }

    void bundled_corpus_writes_no_data_section() {
        FakeDaemon fake("tok");
        QVERIFY(fake.listen());
        DaemonClient client(fake.port(), token_file());
        HostWizard wizard(&client, fake_bin_, dir_.filePath("runs2"));
        QSignalSpy hosted(&wizard, &HostWizard::run_hosted);
        wizard.show();
        for (int i = 0; i < 5; ++i) wizard.button(QWizard::NextButton)->click();
        wizard.button(QWizard::FinishButton)->click();
        QTRY_COMPARE_WITH_TIMEOUT(hosted.size(), 1, 10000);
        const QString toml = read_all(dir_.filePath("runs2/my-run/run.toml"));
        QVERIFY(!toml.contains("[data]"));
        QVERIFY(toml.contains("config = \"tiny\""));
        QVERIFY(toml.contains("codec = \"int8:block=256+zstd:1\""));
        QTRY_COMPARE_WITH_TIMEOUT(fake.posts().size(), 1, 5000);
    }

    void failed_invite_keeps_the_wizard_open_and_hosts_nothing() {
        FakeDaemon fake("tok");
        QVERIFY(fake.listen());
        DaemonClient client(fake.port(), token_file());
        HostWizard wizard(&client, dir_.filePath("no-such-archipelago"), dir_.filePath("runs3"));
        wizard.show();
        for (int i = 0; i < 5; ++i) wizard.button(QWizard::NextButton)->click();
        wizard.button(QWizard::FinishButton)->click();
        QLabel* error = child<QLabel>(&wizard, "error");
        QTRY_VERIFY_WITH_TIMEOUT(error->text().contains("could not invite peer-1"), 5000);
        QVERIFY(wizard.isVisible());
        QVERIFY(wizard.button(QWizard::FinishButton)->isEnabled());
        QCoreApplication::processEvents();
        QVERIFY(fake.posts().isEmpty());
    }

    void join_posts_invite_and_key() {
        FakeDaemon fake("tok");
        QVERIFY(fake.listen());
        DaemonClient client(fake.port(), token_file());
        JoinDialog dialog(&client, "archipelago", dir_.filePath("keys"));
        dialog.show();
        dialog.accept();  // nothing given: stays open, posts nothing
        QVERIFY(dialog.isVisible());
        QTest::keyClicks(child<QPlainTextEdit>(&dialog, "invite_text"),
                         "host_endpoint = tcp://127.0.0.1:5555");
        child<QLineEdit>(&dialog, "key_path")->setText("/keys/me.key");
        dialog.accept();
        QVERIFY(!dialog.isVisible());
        QTRY_COMPARE_WITH_TIMEOUT(fake.posts().size(), 1, 5000);
        const QJsonObject body = QJsonDocument::fromJson(fake.posts()[0].body).object();
        QCOMPARE(fake.posts()[0].path, QByteArray("/api/join"));
        QCOMPARE(body["invite"].toString(), QString("host_endpoint = tcp://127.0.0.1:5555\n"));
        QCOMPARE(body["key"].toString(), QString("/keys/me.key"));
    }
};

QTEST_MAIN(TestHostWizard)
#include "test_host_wizard.moc"
