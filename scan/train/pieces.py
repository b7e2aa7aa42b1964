"""How a text is cut and cleaned before it is read as a training text:
the helpers `sources` and the packaged-data readers share."""

import html
import re

CHUNK = 1500


def chunks(text: str, size: int = CHUNK) -> list[str]:
    """Pieces of about `size` bytes cut at line ends: what a tool result or
    a retrieved page looks like to the detector."""
    out, cur = [], []
    n = 0
    for line in text.splitlines(keepends=True):
        cur.append(line)
        n += len(line)
        if n >= size:
            out.append("".join(cur))
            cur, n = [], 0
    if "".join(cur).strip():
        out.append("".join(cur))
    return out


def strip_html(text: str) -> str:
    text = re.sub(r"(?is)<(script|style).*?</\1>", " ", text)
    return html.unescape(re.sub(r"<[^>]+>", " ", text))
