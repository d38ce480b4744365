#!/usr/bin/env python3
# data/make_bench_corpus.py: extracts the benchmark corpus (data/README.md) from installed Debian
# packages into plain UTF-8 .txt documents (one per book, psalm or part) under OUT_DIR. Markup is
# stripped; nothing is downloaded. Files are named NNNN-source-part.txt so that sorting by name
# interleaves the sources evenly (any stretch of the stream holds the same mix). OUT_DIR/SOURCES,
# written last, lists each source's package, version, licence, documents and bytes.
# Usage: make_bench_corpus.py [--root DIR] OUT_DIR    extract (DIR prefixes every package path)
#        make_bench_corpus.py [--root DIR] --missing  print the packages not installed, one a line
import argparse
import dataclasses
import glob
import gzip
import html
import os
import re
import subprocess
import sys
import tempfile


@dataclasses.dataclass
class Source:
    name: str      # short label used in file names
    package: str   # the Debian package that ships it
    licence: str
    paths: list    # files the package installs that the extraction reads (checked for --missing)
    module: str = ""      # SWORD module name, for SWORD sources
    split: str = "book"   # SWORD: one document per "book" or per "chapter"


SWORD = "/usr/share/sword"
SOURCES = [
    Source("tdavid", "sword-comm-tdavid", "public domain", [f"{SWORD}/mods.d/tdavid.conf"], "TDavid", "chapter"),
    Source("mhcc", "sword-comm-mhcc", "public domain", [f"{SWORD}/mods.d/mhcc.conf"], "MHCC"),
    Source("web", "sword-text-web", "public domain", [f"{SWORD}/mods.d/engWEB2015eb.conf"], "engWEB2015eb"),
    Source("scofield", "sword-comm-scofield", "public domain", [f"{SWORD}/mods.d/scofield.conf"], "Scofield"),
    Source("jargon", "jargon-text", "public domain", ["/usr/share/doc/jargon-text/jargon.txt.gz"]),
]
MOD2IMP = Source("mod2imp", "libsword-utils", "GPL-2", ["/usr/bin/mod2imp"])  # the tool, not a text


def missing_packages(root):
    return sorted({s.package for s in SOURCES + [MOD2IMP] if not all(os.path.exists(root + p) for p in s.paths)})


def package_version(package):
    try:
        out = subprocess.run(["dpkg-query", "-W", "-f=${Version}", package], capture_output=True, text=True)
        return out.stdout.strip() or "unknown"
    except OSError:
        return "unknown"


# ---- SWORD modules (OSIS markup), read with mod2imp ----

def fixed_driver(conf, root):
    """conf, with ModDrv=zCom4 turned into zCom where the module's index is zCom's: 10 bytes an entry
    (4 block, 4 offset, 2 size) instead of zCom4's 12. Debian's sword-comm-mhcc 2.0-1 is such a
    module; read with zCom4, every entry of it is garbage."""
    data = re.search(r"^DataPath=\.?/?(.*?)/?$", conf, re.M)
    if not data or not re.search(r"^ModDrv=zCom4$", conf, re.M):
        return conf
    index = glob.glob(os.path.join(root + SWORD, data.group(1), "*.?zv"))
    sizes = [os.path.getsize(p) for p in index]
    if sizes and any(n % 12 for n in sizes) and all(n % 10 == 0 for n in sizes):
        return re.sub(r"^ModDrv=zCom4$", "ModDrv=zCom", conf, flags=re.M)
    return conf


def sword_config_dir(root, tmp):
    """A private SWORD_PATH holding only our modules' configs, so a user's ~/.sword changes nothing."""
    mods = os.path.join(tmp, "mods.d")
    os.makedirs(mods)
    os.symlink(root + SWORD + "/modules", os.path.join(tmp, "modules"))
    for s in SOURCES:
        if not s.module:
            continue
        with open(root + s.paths[0], encoding="utf-8", errors="replace") as f:
            conf = fixed_driver(f.read(), root)
        with open(os.path.join(mods, os.path.basename(s.paths[0])), "w", encoding="utf-8") as f:
            f.write(conf)
    return tmp


def imp_entries(module, sword_path, root):
    """(key, osis) for each entry of a module, in order, as mod2imp prints them."""
    env = dict(os.environ, SWORD_PATH=sword_path, HOME=sword_path)
    out = subprocess.run([root + MOD2IMP.paths[0], module], env=env, capture_output=True, check=True)
    if out.stderr.strip():
        raise SystemExit(f"make_bench_corpus: mod2imp {module} reported errors: {out.stderr[:200]!r}")
    key, body = None, []
    for line in out.stdout.decode("utf-8", errors="replace").split("\n"):
        if line.startswith("$$$"):
            if key is not None:
                yield key, "\n".join(body)
            key, body = line[3:].strip(), []
        else:
            body.append(line)
    if key is not None:
        yield key, "\n".join(body)


NOTE = re.compile(r"<note\b[^>]*/>|<note\b.*?</note>", re.S)
PARAGRAPH = re.compile(r"</?(?:div|title|chapter|list|table|p)\b[^>]*>")
LINE_END = re.compile(r"<l\b[^>]*\beID=[^>]*>|</(?:l|item|row)>")  # a line ends where the next starts
LINE = re.compile(r"<(?:l|lb|item|row)\b[^>]*>")
TAG = re.compile(r"<[^>]*>")


def osis_to_text(osis):
    # A footnote interrupts a sentence: drop it, leaving a space unless punctuation follows.
    text = NOTE.sub("\x00", osis)
    text = re.sub(r"\x00+(?=[.,;:!?’”)\]])", "", text).replace("\x00", " ")
    text = PARAGRAPH.sub("\n\n", text)
    text = LINE_END.sub("", text)
    text = LINE.sub("\n", text)
    text = TAG.sub("", text).replace("<", "").replace(">", "")
    return html.unescape(text)


def tidy(text):
    """Spaces collapsed, lines stripped of indentation and trailing blanks, at most one empty line."""
    lines = [re.sub(r"[ \t\u00a0]+", " ", line).strip() for line in text.split("\n")]
    return re.sub(r"\n{3,}", "\n\n", "\n".join(lines)).strip() + "\n"


VERSE_KEY = re.compile(r"^(.*) (\d+):(\d+)$")


def sword_documents(source, sword_path, root):
    """[(part name, text)]: one per book (or per chapter), with a "Book N" line before each chapter."""
    docs = {}  # part -> {chapter -> [entry texts]}, in key order
    book_of = {}
    for key, osis in imp_entries(source.module, sword_path, root):
        m = VERSE_KEY.match(key)
        if not m:
            continue  # "[ Testament 1 Heading ]": only importer milestones
        book, chapter = m.group(1), int(m.group(2))
        part = f"{book} {chapter}" if source.split == "chapter" and chapter > 0 else book
        book_of[part] = book
        docs.setdefault(part, {}).setdefault(chapter, []).append(osis_to_text(osis))
    out = []
    for part, chapters in docs.items():
        pieces = []
        for chapter, entries in chapters.items():
            body = tidy(" ".join(entries))
            if body.strip():
                pieces.append((f"{book_of[part]} {chapter}\n\n" if chapter > 0 else "") + body)
        if pieces:
            out.append((part, "\n".join(pieces)))
    return out


# ---- plain-text sources ----

def read_gzip(path):
    with gzip.open(path, "rt", encoding="utf-8", errors="replace") as f:
        return f.read()


def jargon_documents(source, root):
    """The Jargon File in three parts: the introduction (chapters 1-12), the lexicon, the appendices.
    Skipped: the table of contents, the glossary and the lists of entry names after each letter's
    heading in the lexicon ("  B" then "   B1FF", "   B5", ... up to the first ":entry:")."""
    lines = read_gzip(root + source.paths[0]).replace("\u00a0", " ").split("\n")
    start = next(i for i, l in enumerate(lines) if l.startswith("Chapter 1."))
    glossary = next(i for i, l in enumerate(lines) if i > start and l == "Glossary")
    lexicon = next(i for i, l in enumerate(lines) if i > glossary and re.match(r"^   :.+:", l))
    appendix = next(i for i, l in enumerate(lines) if i > lexicon and l.startswith("Appendix A."))

    def entries_only(part):
        kept, listing = [], False
        for l in part:
            if re.match(r"^  [A-Z]$", l):
                listing = True
            elif listing and re.match(r"^   :.+:", l):
                listing = False
            if not listing:
                kept.append(l)
        return kept

    def clean(part):
        text = "\n".join(part)
        text = re.sub(r"\{([^{}]*)\}", r"\1", text)          # {cross-reference} -> cross-reference
        text = re.sub(r"^   :(.+?):", r"\1:", text, flags=re.M)  # ":entry: n." -> "entry: n."
        text = re.sub(r"^   ", "", text, flags=re.M)
        return re.sub(r"\n{3,}", "\n\n", text).strip() + "\n"

    return [("introduction", clean(lines[start:glossary])), ("lexicon", clean(entries_only(lines[lexicon:appendix]))),
            ("appendices", clean(lines[appendix:]))]


# ---- the corpus ----

def slug(part):
    return re.sub(r"[^a-z0-9]+", "-", part.lower()).strip("-")


def interleaved(sources_docs):
    """All documents ordered by how far through its own source each one's middle lies, so every
    source is spread evenly over the whole stream."""
    keyed = []
    for source, docs in sources_docs:
        total = sum(len(t.encode()) for _, t in docs)
        done = 0
        for part, text in docs:
            size = len(text.encode())
            keyed.append(((done + size / 2) / total, source.name, part, text))
            done += size
    return sorted(keyed, key=lambda k: (k[0], k[1]))


def extract(out_dir, root):
    missing = missing_packages(root)
    if missing:
        raise SystemExit("make_bench_corpus: missing Debian package(s): " + " ".join(missing) +
                         "; install them with apt-get install (scripts/install_deps.sh does)")
    os.makedirs(out_dir, exist_ok=True)
    for name in os.listdir(out_dir):  # an earlier, maybe interrupted, extraction
        if name.endswith(".txt") or name.startswith("SOURCES"):
            os.remove(os.path.join(out_dir, name))
    sources_docs = []
    with tempfile.TemporaryDirectory(prefix="sword-") as tmp:
        sword_path = sword_config_dir(root, tmp)
        for s in SOURCES:
            docs = sword_documents(s, sword_path, root) if s.module else jargon_documents(s, root)
            sources_docs.append((s, docs))
    for i, (_, name, part, text) in enumerate(interleaved(sources_docs)):
        with open(os.path.join(out_dir, f"{i:04d}-{name}-{slug(part)}.txt"), "w", encoding="utf-8") as f:
            f.write(text)
    lines = ["# source package version licence documents bytes"]
    for s, docs in sources_docs:
        size = sum(len(t.encode()) for _, t in docs)
        licence = s.licence.replace(" ", "-")
        lines.append(f"{s.name} {s.package} {package_version(s.package)} {licence} {len(docs)} {size}")
    with open(os.path.join(out_dir, "SOURCES.tmp"), "w", encoding="utf-8") as f:
        f.write("\n".join(lines) + "\n")
    os.replace(os.path.join(out_dir, "SOURCES.tmp"), os.path.join(out_dir, "SOURCES"))
    print("\n".join(lines), file=sys.stderr)


def main():
    p = argparse.ArgumentParser(description="Extract the benchmark corpus from Debian packages.")
    p.add_argument("--root", default="", help="prefix for every package path (tests)")
    p.add_argument("--missing", action="store_true", help="print the packages that are not installed")
    p.add_argument("out_dir", nargs="?")
    a = p.parse_args()
    root = a.root.rstrip("/")
    if a.missing:
        for package in missing_packages(root):
            print(package)
    elif a.out_dir:
        extract(a.out_dir, root)
    else:
        p.error("give OUT_DIR or --missing")


if __name__ == "__main__":
    main()
