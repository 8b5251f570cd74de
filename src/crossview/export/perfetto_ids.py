"""Process and thread ids for a Chrome/Perfetto trace built from several artifacts.

The trace format wants integer pid/tid. A host process keeps its own pid and a GPU its device
number (Kineto's convention) when that id is free; a collision (two ranks' device 0, two
captures of one pid) gets a fresh id, and the process_name metadata says which is which."""

from __future__ import annotations

from dataclasses import dataclass, field

_FRESH = 1_000_000  # ids handed out on a collision start here, far from real pids


def _int(text: object) -> int | None:
    try:
        return int(str(text))
    except ValueError:
        return None


@dataclass
class Track:
    pid: int
    name: str
    sort: int  # process_sort_index: host processes first, then GPUs by device
    threads: dict[str, int] = field(default_factory=dict)  # tid (as stored) → trace tid


@dataclass
class Ids:
    tracks: dict[tuple[str, int, str], Track] = field(default_factory=dict)
    _used: set[int] = field(default_factory=set)
    _next: int = _FRESH

    def _pid(self, want: int | None) -> int:
        if want is None or want in self._used or want < 0:
            while self._next in self._used:
                self._next += 1
            want = self._next
        self._used.add(want)
        return want

    def process(self, kind: str, artifact: int, key: str, name: str) -> Track:
        """kind: host (key = pid) | gpu (key = device)."""
        t = self.tracks.get((kind, artifact, key))
        if t is None:
            sort = len(self.tracks) if kind == "host" else 10_000 + (_int(key) or 0)
            t = Track(self._pid(_int(key)), name, sort)
            self.tracks[(kind, artifact, key)] = t
        return t

    def thread(self, track: Track, tid: str) -> int:
        got = track.threads.get(tid)
        if got is None:
            want = _int(tid)
            got = want if want is not None and want >= 0 and want not in \
                track.threads.values() else _FRESH + len(track.threads)
            track.threads[tid] = got
        return got

    def metadata(self, thread_label: str = "thread") -> list[dict[str, object]]:
        out: list[dict[str, object]] = []
        for (kind, _, _), t in self.tracks.items():
            out.append({"ph": "M", "name": "process_name", "pid": t.pid, "tid": 0,
                        "args": {"name": t.name}})
            out.append({"ph": "M", "name": "process_sort_index", "pid": t.pid, "tid": 0,
                        "args": {"sort_index": t.sort}})
            for tid_text, tid in t.threads.items():
                label = f"stream {tid_text}" if kind == "gpu" else f"{thread_label} {tid_text}"
                out.append({"ph": "M", "name": "thread_name", "pid": t.pid, "tid": tid,
                            "args": {"name": label}})
                out.append({"ph": "M", "name": "thread_sort_index", "pid": t.pid, "tid": tid,
                            "args": {"sort_index": tid}})
        return out
