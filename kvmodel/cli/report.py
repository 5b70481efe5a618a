"""``report``: a standalone HTML report of the scenario (built by ``kvview.report``)."""

from __future__ import annotations

from pathlib import Path

from . import edge
from .options import scenario_from_args
from .output import json_text


def cmd_report(args):
    out = Path(args.out)
    if out.suffix.lower() not in (".html", ".htm"):
        raise ValueError(f"--out must end in .html or .htm, got {args.out!r}")
    if out.exists() and not out.is_file():  # a FIFO would block the write, a device take it
        raise ValueError(f"--out {args.out!r} exists and is not a regular file")
    sc = scenario_from_args(args)
    html, url, gaps = edge.report(sc, base_url=args.base_url, title=args.title)
    out.write_text(html, encoding="utf-8")
    size = out.stat().st_size
    payload = {"path": str(out), "bytes": size, "share_url": url, "share_link_gaps": gaps}
    if args.json:
        print(json_text(payload))
        return
    print(f"wrote {out} ({edge.fmt_bytes(size)}, {size:,} bytes)")
    if url is None:
        print(f"no share link: the app's link cannot carry {'; '.join(gaps)}")
