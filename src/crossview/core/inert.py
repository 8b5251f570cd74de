"""Names and paths are data, never control or markup (issue 43, decision 0890).

A file, folder, kernel or frame name can hold anything: a newline and "crossview: error: …",
an ANSI clear-screen, a BEL or NUL, a bidi override (U+202E turns `gnp.exe` into `exe.png`),
an isolate (U+2066–U+2069), a mark (U+200E/U+200F) or a zero-width character. Every such
character — whatever `str.isprintable` refuses: control (Cc), format (Cf: bidi controls,
zero-width, tag characters), separators other than the space (Zl, Zp, NBSP…), surrogates
(non-UTF-8 names), private-use and unassigned code points — is shown as its escape (`\\n`,
`\\x1b`, `\\u202e`), the form Python's repr and the CLI's error lines use.

- `name`: a name or path entering prose, a cell or an export: every such character escaped,
  the newline included (a name is one line).
- `text`: a whole rendered document — a recap, JSON, a terminal write: the same characters,
  but its own line breaks and tabs kept, written as JSON's `\\uXXXX` escapes (UTF-16 pairs
  past U+FFFF), so a JSON document stays valid and decodes to the same values. It cannot
  tell a newline inside a name from the document's: names enter through `name` first.
"""

from __future__ import annotations

import re


def _escaped(c: str) -> str:
    return repr(c)[1:-1]  # '\\n', '\\x1b', '\\u202e', '\\U000e0041', '\\udcff'


def name(s: object) -> str:
    """A name or path as data: one line, every non-printable character escaped."""
    t = str(s)
    if t.isprintable():
        return t
    return "".join(c if c.isprintable() else _escaped(c) for c in t)


_CANDIDATE = re.compile(r"[^\x20-\x7e\n\t]")  # printable non-ASCII is kept below


def _u_escape(m: re.Match[str]) -> str:
    c = m.group()
    if c.isprintable():
        return c
    o = ord(c)
    if o > 0xFFFF:  # JSON escapes are UTF-16 code units: a surrogate pair
        o -= 0x10000
        return f"\\u{0xD800 + (o >> 10):04x}\\u{0xDC00 + (o & 0x3FF):04x}"
    return f"\\u{o:04x}"


def text(doc: str) -> str:
    """A rendered document (Markdown, JSON, a terminal write) with every non-printable
    character but its line breaks and tabs written as a `\\uXXXX` escape."""
    if doc.isprintable() or doc.replace("\n", "").replace("\t", "").isprintable():
        return doc  # the common case, checked in C
    return _CANDIDATE.sub(_u_escape, doc)


# the bytes a UTF-8 document may hold as they are: printable ASCII, line breaks and tabs
_ASCII_KEPT = bytes(range(0x20, 0x7F)) + b"\n\t"


def encoded(doc: bytes) -> bytes:
    """`text` for a document already encoded as UTF-8 (the JSON renderer's bytes), without
    decoding it: the bytes other than printable ASCII, line breaks and tabs (the non-ASCII
    characters' whole UTF-8 sequences, and any control byte) are checked as text, and the
    document comes back unchanged when they are all printable (B200's 12 MB recap: 6 ms,
    against 27 ms for `text` on its string). Else it is decoded and escaped as `text` does."""
    rest = doc.translate(None, _ASCII_KEPT)
    if not rest or rest.decode("utf-8", "surrogateescape").isprintable():
        return doc
    return text(doc.decode("utf-8", "surrogateescape")).encode("utf-8")
