"""The fixed canary texts: varied queries and documents, plus texts sized to the contract's max length.

Written for this project; nothing here is sensitive. Ids are stable so verdicts can name texts.
"""

from __future__ import annotations

from collections.abc import Callable

QUERIES: tuple[tuple[str, str], ...] = (
    ("q1", "how does a database commit a transaction"),
    ("q2", "why does bread dough rise in a warm oven"),
    ("q3", "What happens when a basketball player fouls during a shot?"),
    ("q4", "rollback vs commit"),
    ("q5", "planet orbit around the sun, how long is one year on Mars?"),
    ("q6", "CPU temperature 95°C — is that safe?"),
    ("q7", "python: sort a list of dicts by key"),
    ("q8", "Wie lange muss Brot im Ofen backen?"),
    ("q9", "如何提高检索系统的召回率"),
    ("q10", "tax"),
    ("q11", "IS THE NETWORK ROUTER DROPPING PACKETS???"),
    ("q12", "heart rate 180 bpm after running 5 km — normal?"),
)

DOCUMENTS: tuple[tuple[str, str], ...] = (
    ("d1", "A transaction commit makes every write durable: once the log record is flushed, a crash cannot undo it."),
    ("d2", "Rollback undoes the writes of a failed transaction and releases its locks."),
    ("d3", "Yeast ferments the sugars in dough and releases carbon dioxide, which makes bread rise."),
    (
        "d4",
        "In basketball, a shooting foul gives the fouled player free throws: two for a missed two-point "
        "shot, three for a missed three-pointer.",
    ),
    ("d5", "Mars takes about 687 Earth days to orbit the Sun once."),
    (
        "d6",
        "Most desktop CPUs throttle near 100 °C; sustained load at 95 °C is within spec but leaves little headroom.",
    ),
    ("d7", "sorted(rows, key=lambda r: r['name']) returns a new list; rows.sort(key=...) sorts in place."),
    ("d8", "Ein Brot mit 1 kg Teig backt bei 230 °C etwa 45 bis 50 Minuten."),
    ("d9", "检索系统的召回率可以通过更好的分块、混合检索和查询改写来提高。"),
    ("d10", "Budget rules: save 20% of income, keep an emergency fund, and pay high-interest loans first."),
    ("d11", "ok"),
    (
        "d12",
        "Packet loss on a home router is often caused by Wi-Fi interference, an overheated device or "
        "outdated firmware.  Restart it, update the firmware, and test with a cable.",
    ),
    (
        "d13",
        "The resting heart rate of a healthy adult is 60–100 beats per minute; during hard running it "
        "can approach the age-predicted maximum.",
    ),
    ("d14", "🚆 Trains leave the station every 15 minutes; the last one departs at 23:45 from track 4."),
)

# Common English words that are whole tokens in BERT-style WordPiece vocabularies, so a text of
# N of them is close to N + 2 tokens.
_WORDS = [
    "the",
    "index",
    "query",
    "table",
    "row",
    "column",
    "lock",
    "write",
    "read",
    "bread",
    "water",
    "game",
    "team",
    "player",
    "score",
    "rule",
    "goal",
    "star",
    "planet",
    "moon",
    "sun",
    "orbit",
    "light",
    "space",
    "garden",
    "soil",
    "seed",
    "plant",
    "leaf",
    "root",
    "money",
    "bank",
    "loan",
    "rate",
    "tax",
    "network",
    "heart",
    "blood",
    "music",
    "note",
    "train",
    "station",
    "engine",
    "speed",
]


def filler(n_words: int) -> str:
    """A deterministic text of ``n_words`` common words, in sentences."""
    words = [_WORDS[(i * 7) % len(_WORDS)] for i in range(n_words)]
    sentences = [" ".join(words[i : i + 12]) for i in range(0, len(words), 12)]
    return ". ".join(s.capitalize() for s in sentences) + "."


NEAR_LIMIT_SHARE = 0.8


def near_limit_document(max_length: int, tokens: Callable[[str], int] | None = None) -> tuple[str, str]:
    """A document of about 80% of the contract's max length: long, but not truncated. ``tokens`` counts a
    document's whole model input (prefix and the special tokens the tokenizer adds, an appended EOS included);
    when the text sized by words is over ``max_length`` tokens, its words are cut until that input is at most
    80% of ``max_length``, so a tokenizer that splits words into several tokens (a decoder's byte-level BPE)
    cannot push the probe past a server's limit. A text that fits is kept as it is."""
    target = max(1, int(max_length * NEAR_LIMIT_SHARE))
    n = max(1, target - 4)
    text = filler(n)
    if tokens is None or tokens(text) <= max_length:  # it fits: the text every model has had so far
        return "d_long", text
    for _ in range(16):
        have = tokens(text)
        if have <= target or n == 1:
            break
        n = max(1, min(n - 1, n * target // have))
        text = filler(n)
    return "d_long", text


def over_limit_document(max_length: int) -> tuple[str, str]:
    """A document about three times the max length: the server must truncate as the contract says, or refuse."""
    return "d_over", filler(max_length * 3)


def queries() -> list[tuple[str, str]]:
    return list(QUERIES)


def documents(max_length: int, tokens: Callable[[str], int] | None = None) -> list[tuple[str, str]]:
    return [*list(DOCUMENTS), near_limit_document(max_length, tokens)]
