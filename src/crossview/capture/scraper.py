"""Scrape a `/metrics` endpoint before, during (every N s) and after a load into one Prometheus
series file: each scrape preceded by `# scrape_time <epoch s>` (docs/input-formats.md), which
the prometheus reader turns into counter rates and window histograms."""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from crossview.capture.engine_http import HttpFailure, get_text


@dataclass
class Scraper:
    url: str
    path: Path
    interval_s: float = 5.0
    scrapes: int = 0
    failures: list[str] = field(default_factory=list)
    _stop: threading.Event = field(default_factory=threading.Event)
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _thread: threading.Thread | None = None

    def scrape(self) -> bool:
        ts = time.time()
        try:
            text = get_text(self.url)
        except HttpFailure as e:
            self.failures.append(str(e))
            return False
        with self._lock, self.path.open("a", encoding="utf-8") as f:
            f.write(f"# scrape_time {ts:.3f}\n{text.rstrip()}\n")
        self.scrapes += 1
        return True

    def start(self) -> None:
        """Scrape once now (the "before" scrape), then every interval on a daemon thread."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.scrape()
        if self.interval_s > 0:
            self._thread = threading.Thread(target=self._loop, name="crossview-scrape",
                                            daemon=True)
            self._thread.start()

    def _loop(self) -> None:
        while not self._stop.wait(self.interval_s):
            self.scrape()

    def stop(self) -> None:
        """Stop the interval thread, then scrape once more (the "after" scrape)."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=30)
        self.scrape()

    def problems(self) -> list[str]:
        if not self.failures:
            return []
        return [f"{len(self.failures)} /metrics scrape(s) failed, first: {self.failures[0]}"]
