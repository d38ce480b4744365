// tests/gui/fake_archipelago.cpp: a process the GUI tests use in place of `archipelago`:
// `daemon --control-port P --token-file F` writes a token to F if missing and serves FakeDaemon's
// canned API until SIGTERM; `keygen --out K` and `invite ... --out I` write files of the right
// names.
#include <QCoreApplication>
#include <QFile>
#include <QFileInfo>
#include <QUuid>
#include <cstdio>

#include "tests/gui/fake_daemon.h"

namespace {

bool write(const QString& path, const QByteArray& text) {
    QFile f(path);
    return f.open(QIODevice::WriteOnly | QIODevice::Truncate) && f.write(text) == text.size();
}

// keygen --out K: K and K.pub. invite --config C --peer-key P --name N --out I: I, and N appended
// to allow_list.txt beside C (the real one uses C's checkpoint_dir). A bad .pub fails as the CLI
// does.
int files_command(const QStringList& a) {
    auto opt = [&](const char* name) { return a.value(a.indexOf(name) + 1); };
    if (a.value(1) == "keygen")
        return write(opt("--out"), "secret\n") && write(opt("--out") + ".pub", "PUBLICKEY\n") ? 0
                                                                                              : 1;
    QFile pub(opt("--peer-key"));
    if (!pub.open(QIODevice::ReadOnly) || pub.readAll().trimmed().size() < 8) {
        std::fprintf(stderr, "error: '%s' is not a public key\n", qPrintable(opt("--peer-key")));
        return 1;
    }
    QFile allow(QFileInfo(opt("--config")).absolutePath() + "/allow_list.txt");
    if (!allow.open(QIODevice::Append)) return 1;
    allow.write(opt("--name").toUtf8() + "\n");
    return write(opt("--out"), "host_endpoint = tcp://127.0.0.1:5555\n") ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
    QCoreApplication app(argc, argv);
    const QStringList a = app.arguments();
    if (a.value(1) == "keygen" || a.value(1) == "invite") return files_command(a);
    const int port_at = a.indexOf("--control-port"), token_at = a.indexOf("--token-file");
    if (a.value(1) != "daemon" || port_at < 0 || token_at < 0 || token_at + 1 >= a.size()) {
        std::fprintf(stderr, "usage: fake_archipelago daemon --control-port P --token-file F\n");
        return 2;
    }
    QFile f(a.value(token_at + 1));
    if (!f.exists()) {
        if (!f.open(QIODevice::WriteOnly)) return 1;
        f.write(QUuid::createUuid().toByteArray(QUuid::Id128) + "\n");
        f.close();
        f.setPermissions(QFile::ReadOwner | QFile::WriteOwner);
    }
    if (!f.open(QIODevice::ReadOnly)) return 1;
    arch::gui::test::FakeDaemon daemon(f.readAll().trimmed());
    if (!daemon.listen(static_cast<quint16>(a.value(port_at + 1).toUInt()))) {
        std::fprintf(stderr, "fake_archipelago: cannot listen on %s\n",
                     qPrintable(a.value(port_at + 1)));
        return 1;
    }
    return QCoreApplication::exec();
}
