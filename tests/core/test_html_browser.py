"""The HTML report in real headless Chromium: it renders, logs no console errors, shows charts."""

from __future__ import annotations

import shutil
import struct
import subprocess
import sys
import zlib
from pathlib import Path

import pytest

from cbaudit.report import REPORTERS

sys.path.insert(0, str(Path(__file__).parent))
from test_publish import _gate_report

pytestmark = pytest.mark.browser

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--enable-logging=stderr",
    "--v=0",
]


def _png_pixels(path: Path) -> tuple[int, int, set[bytes]]:
    """Width, height and the set of distinct RGB(A) pixels of an 8-bit PNG (no filters undone
    beyond what is needed to count distinct colours roughly: we decode scanlines fully)."""
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    pos, idat, width, height, ctype = 8, b"", 0, 0, 0
    while pos < len(data):
        (length,) = struct.unpack(">I", data[pos : pos + 4])
        tag = data[pos + 4 : pos + 8]
        body = data[pos + 8 : pos + 8 + length]
        if tag == b"IHDR":
            width, height, _, ctype = struct.unpack(">IIBB", body[:10])
        elif tag == b"IDAT":
            idat += body
        pos += 12 + length
    bpp = 4 if ctype == 6 else 3
    raw = zlib.decompress(idat)
    stride = width * bpp
    prev = bytearray(stride)
    colours: set[bytes] = set()
    i = 0
    for _ in range(height):
        ftype = raw[i]
        line = bytearray(raw[i + 1 : i + 1 + stride])
        i += 1 + stride
        for x in range(stride):
            a = line[x - bpp] if x >= bpp else 0
            b = prev[x]
            c = prev[x - bpp] if x >= bpp else 0
            if ftype == 1:
                line[x] = (line[x] + a) & 0xFF
            elif ftype == 2:
                line[x] = (line[x] + b) & 0xFF
            elif ftype == 3:
                line[x] = (line[x] + (a + b) // 2) & 0xFF
            elif ftype == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                pred = a if pa <= pb and pa <= pc else (b if pb <= pc else c)
                line[x] = (line[x] + pred) & 0xFF
        for x in range(0, stride, bpp * 7):
            colours.add(bytes(line[x : x + 3]))
        prev = line
    return width, height, colours


@pytest.mark.skipif(
    CHROMIUM is None, reason="headless Chromium is not installed (apt-get install chromium)"
)
def test_html_report_renders_in_chromium(tmp_path: Path) -> None:
    """Chromium renders the report without console errors; the screenshot shows coloured charts."""
    page = tmp_path / "report.html"
    page.write_text(REPORTERS["html"](_gate_report(), 0, False), encoding="utf-8")
    shot = tmp_path / "shot.png"
    proc = subprocess.run(
        [
            str(CHROMIUM),
            *FLAGS,
            f"--user-data-dir={tmp_path / 'profile'}",
            "--window-size=1200,2600",
            f"--screenshot={shot}",
            page.as_uri(),
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    console = [ln for ln in proc.stderr.splitlines() if "CONSOLE" in ln or "Uncaught" in ln]
    assert console == []
    width, height, colours = _png_pixels(shot)
    assert (width, height) == (1200, 2600)
    # The chart palette's blue (#3b6ea8) and orange (#d9822b) must be on screen.
    assert bytes.fromhex("3b6ea8") in colours
    assert bytes.fromhex("d9822b") in colours
    dom = subprocess.run(
        [
            str(CHROMIUM),
            *FLAGS,
            f"--user-data-dir={tmp_path / 'profile2'}",
            "--dump-dom",
            page.as_uri(),
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert dom.stdout.count("<svg") == 6
