"""What NVIDIA's native `ncu_report` loader writes to file descriptor 2 (its protobuf/absl
logging: "E0000 … message_lite.cc:195] Can't parse message …") is caught while it runs, so
it never leaks onto crossview's stderr as a line of its own; what it says about the file
becomes a problem of the artifact instead (issue 43)."""

from __future__ import annotations

import contextlib
import os
import re
import sys
import tempfile
import threading
from collections.abc import Iterator

_LOCK = threading.Lock()  # fd 2 is the process's: one capture at a time
# absl's preamble, not about the file
_NOISE = re.compile(r"^WARNING: All log messages before absl::InitializeLog\(\)")
_PREFIX = re.compile(r"^[EWF]\d{4} [\d:. ]+\d+ [\w.]+:\d+\] ")  # absl's "E0000 00:00:… x.cc:1] "


@contextlib.contextmanager
def caught() -> Iterator[list[str]]:
    """Run the body with fd 2 sent to a temp file; the list fills with what native code
    wrote there (its log prefixes stripped) when the body ends."""
    said: list[str] = []
    with _LOCK, tempfile.TemporaryFile() as tmp:
        sys.stderr.flush()
        saved = os.dup(2)
        os.dup2(tmp.fileno(), 2)
        try:
            yield said
        finally:
            os.dup2(saved, 2)
            os.close(saved)
            tmp.seek(0)
            text = tmp.read(1 << 16).decode("utf-8", "replace")
            said.extend(_PREFIX.sub("", line).strip() for line in text.splitlines()
                        if line.strip() and not _NOISE.match(line))
