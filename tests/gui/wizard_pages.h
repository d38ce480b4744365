// tests/gui/wizard_pages.h: filling the app's wizard pages in a test as a person would: a widget by
// its objectName, and a combo box's item by the value it stands for.
#pragma once

#include <QComboBox>
#include <QWidget>
#include <QtTest>

namespace arch::gui::test {

template <class W>
W* child(QWidget* parent, const char* name) {
    W* w = parent->findChild<W*>(name);
    if (!w) qFatal("no widget named %s", name);
    return w;
}

inline void select_data(QComboBox* box, const QString& data) {
    const int i = box->findData(data);
    QVERIFY2(i >= 0, qPrintable(data));
    box->setCurrentIndex(i);
}

}  // namespace arch::gui::test
