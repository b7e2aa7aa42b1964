"""The learned scorer's features, bit for bit as `scan/src/injection/model/features.rs`.

A text's words are its runs of ASCII letters and digits and non-ASCII bytes
(so a word of any script is a run of its UTF-8 bytes), lowercased by setting
bit 5 of every byte. Each word gives a unigram feature and, with the word
before it, a bigram feature: hashed into a table of 2^BITS weights. Words
are grouped in blocks of BLOCK; a window is two neighbouring blocks, and a
text's logit is the bias plus the largest window sum (an injection is a few
sentences inside what may be a long tool output: averaging over the whole
text would dilute it).
"""

import re

BITS = 19
BLOCK = 32
# Bytes of a word that are hashed: longer words (base64, hashes) are rare
# and say little beyond their start.
MAX_WORD = 32

K1 = 0x9E3779B97F4A7C15
K2 = 0xBF58476D1CE4E5B9
K3 = 0x94D049BB133111EB
M64 = (1 << 64) - 1
LOWER = 0x2020202020202020

WORD = re.compile(rb"[A-Za-z0-9\x80-\xff]+")


def word_hash(word: bytes) -> int:
    word = word[:MAX_WORD]
    h = len(word)
    for i in range(0, len(word), 8):
        chunk = word[i : i + 8]
        x = int.from_bytes(chunk, "little") | (LOWER & ((1 << (8 * len(chunk))) - 1))
        h = ((h ^ x) * K1) & M64
    return h


def fmix(x: int) -> int:
    x ^= x >> 33
    x = (x * K2) & M64
    x ^= x >> 29
    return x


def unigram(h: int) -> int:
    return fmix(h) >> (64 - BITS)


def bigram(prev: int, h: int) -> int:
    return fmix(((prev * K3) & M64) ^ h) >> (64 - BITS)


def blocks(text: bytes) -> list[list[int]]:
    """The feature indices of each block of BLOCK words."""
    out: list[list[int]] = []
    cur: list[int] = []
    count = 0
    prev = None
    for m in WORD.finditer(text):
        h = word_hash(m.group())
        cur.append(unigram(h))
        if prev is not None:
            cur.append(bigram(prev, h))
        prev = h
        count += 1
        if count == BLOCK:
            out.append(cur)
            cur = []
            count = 0
    if cur:
        out.append(cur)
    return out


def windows(text: bytes) -> list[list[int]]:
    """The feature indices of each window (two neighbouring blocks, or the
    only block)."""
    bs = blocks(text)
    if len(bs) <= 1:
        return bs
    return [bs[k] + bs[k + 1] for k in range(len(bs) - 1)]


def max_window(text: bytes, table) -> tuple[int, int] | None:
    """The largest window sum of `table` over `text`, and the text's number
    of words; None without words."""
    ws = windows(text)
    if not ws:
        return None
    return max(sum(table[i] for i in w) for w in ws), len(WORD.findall(text))


def logit(text: bytes, table, scale: float, bias: float) -> float | None:
    """The text's logit. A text of fewer than BLOCK words is too short to
    judge by its words alone: its evidence is shrunk toward the prior in
    proportion (the rules judge short texts)."""
    m = max_window(text, table)
    if m is None:
        return None
    total, n = m
    return bias + scale * total * min(1.0, n / BLOCK)
