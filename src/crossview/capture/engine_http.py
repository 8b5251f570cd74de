"""The few HTTP calls a serving capture makes (stdlib urllib only): GET text/JSON, POST."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from typing import Any


class HttpFailure(Exception):
    """One failed call, said in one line: what was asked and what came back."""


def _call(url: str, method: str, timeout: float) -> bytes:
    req = urllib.request.Request(url, method=method, data=b"" if method == "POST" else None)
    try:
        with urllib.request.urlopen(req, timeout=timeout) as r:  # noqa: S310 (user's URL)
            return r.read()
    except urllib.error.HTTPError as e:
        body = e.read().decode("utf-8", "replace").strip().splitlines()[:1]
        raise HttpFailure(f"{method} {url}: HTTP {e.code} {e.reason}"
                          + (f" — {body[0][:200]}" if body else "")) from None
    except urllib.error.URLError as e:
        raise HttpFailure(f"{method} {url}: {e.reason}") from None
    except (TimeoutError, OSError) as e:
        raise HttpFailure(f"{method} {url}: {e}") from None


def get_text(url: str, timeout: float = 10.0) -> str:
    return _call(url, "GET", timeout).decode("utf-8", "replace")


def get_json(url: str, timeout: float = 10.0) -> Any:
    raw = _call(url, "GET", timeout)
    try:
        return json.loads(raw)
    except ValueError:
        raise HttpFailure(f"GET {url}: not JSON") from None


def post(url: str, timeout: float = 600.0) -> str:
    """POST with an empty body (vLLM's /start_profile, /stop_profile); stopping the profiler
    returns only after the server has written its traces, so the default timeout is long."""
    return _call(url, "POST", timeout).decode("utf-8", "replace")
