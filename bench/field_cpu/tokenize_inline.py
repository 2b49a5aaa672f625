"""A small text classifier that cleans and tokenises its documents on the fly, in the main process.

The Dataset holds raw strings; ``__getitem__`` normalises them (lower-case, strip markup with
regular expressions, collapse whitespace) and encodes them with a BPE tokenizer trained at start
with ``tokenizers``; the DataLoader has ``num_workers=0`` (the default), so all of that runs in the
training process between steps. The model (embedding bag + MLP) is cheap: text preparation in the
main thread is the limit, and no DataLoader worker exists to wait on.

    python bench/field_cpu/tokenize_inline.py --duration 90

Prints a ready line on stdout, then on exit its own time split (batch preparation vs. step).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import sys
import time

import torch
import torch.nn as nn
from tokenizers import Tokenizer, models, pre_tokenizers, trainers
from torch.utils.data import DataLoader, Dataset

TAG = re.compile(r"<[^>]+>")
URL = re.compile(r"https?://\S+")
SPACE = re.compile(r"\s+")


def corpus(n: int, words_per_doc: int, seed: int = 0) -> list[str]:
    rng = random.Random(seed)
    vocab = ["".join(rng.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(rng.randint(2, 10)))
             for _ in range(5000)]
    weights = [1.0 / (i + 1) for i in range(len(vocab))]
    docs = []
    for _ in range(n):
        words = rng.choices(vocab, weights, k=words_per_doc)
        for j in range(0, words_per_doc, 40):  # markup and links, as scraped text has
            words[j] = rng.choice(["<p>", "<br/>", "</div>", "https://example.org/a?b=1", words[j].upper()])
        docs.append(" ".join(words))
    return docs


class Docs(Dataset):
    def __init__(self, docs: list[str], tok: Tokenizer, max_len: int):
        self.docs, self.tok, self.max_len = docs, tok, max_len

    def __len__(self):
        return len(self.docs)

    def __getitem__(self, i):
        text = SPACE.sub(" ", URL.sub(" ", TAG.sub(" ", self.docs[i].lower()))).strip()
        ids = self.tok.encode(text).ids[: self.max_len]
        label = len(ids) % 3
        ids = ids + [0] * (self.max_len - len(ids))
        return torch.tensor(ids), label


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--duration", type=float, default=90)
    ap.add_argument("--docs", type=int, default=4000)
    ap.add_argument("--words", type=int, default=3000)
    a = ap.parse_args()
    docs = corpus(a.docs, a.words)
    tok = Tokenizer(models.BPE(unk_token="[UNK]"))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    tok.train_from_iterator(docs[:500], trainers.BpeTrainer(vocab_size=8000, special_tokens=["[PAD]", "[UNK]"]))
    dl = DataLoader(Docs(docs, tok, max_len=512), batch_size=32, shuffle=True)
    net = nn.Sequential(nn.EmbeddingBag(8000, 128), nn.Linear(128, 128), nn.ReLU(), nn.Linear(128, 3))
    opt = torch.optim.Adam(net.parameters(), lr=1e-3)
    print(json.dumps({"t": time.time(), "ready": True, "pid": os.getpid()}), flush=True)
    t0 = time.perf_counter()
    prep = step = 0.0
    steps = 0
    while time.perf_counter() - t0 < a.duration:
        it = iter(dl)
        while True:
            ta = time.perf_counter()
            try:
                x, y = next(it)
            except StopIteration:
                break
            tb = time.perf_counter()
            opt.zero_grad()
            nn.functional.cross_entropy(net(x), y).backward()
            opt.step()
            tc = time.perf_counter()
            prep, step, steps = prep + tb - ta, step + tc - tb, steps + 1
            if tc - t0 >= a.duration:
                break
    total = time.perf_counter() - t0
    print(json.dumps({"t": time.time(), "event": "end", "steps": steps, "steps_per_s": steps / total,
                      "prep_share": prep / total, "step_share": step / total}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
