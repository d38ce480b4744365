// tests/gui/fake_daemon_main.cpp: fake_archipelago, a process the lifecycle tests use in place of
// `archipelago`: `fake_archipelago daemon --control-port P --token-file F` writes a token to F if
// it is missing and serves FakeDaemon's canned API until SIGTERM (default action: exit).
#include <QCoreApplication>
#include <QFile>
#include <QUuid>
#include <cstdio>

#include "tests/gui/fake_daemon.h"

int main(int argc, char** argv) {
    QCoreApplication app(argc, argv);
    const QStringList a = app.arguments();
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
