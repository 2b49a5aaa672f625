"""Language-model training on text tokenised in the DataLoader workers (Hugging Face ``tokenizers``).

At start the scenario writes a corpus of long documents (pseudo-words with Zipf frequencies; no
data set is downloaded) and trains a byte-pair-encoding tokenizer on part of it with ``tokenizers``
(NFKC + lowercase normaliser, whitespace pre-tokeniser, 8k vocabulary; no model is downloaded).
Each item is one document: the worker tokenises the whole document and truncates it to the
model's context, as ``tokenizer(text, truncation=True, max_length=...)`` does; the batch is padded
by the collate function. The model is a ``torch.nn.TransformerEncoder`` language model (bf16
autocast on CUDA), AdamW, ``loss.item()`` every step.

Ground truth by construction: the document length is set at start so that one worker needs
``--ratio`` times as long to tokenise a batch as the model needs to train on it (both measured
in-process: a few training steps on ready-made token ids, and the tokenising of one batch in the
main process). With ``--workers`` below the ratio the workers cannot keep up (``decode``); with
workers well above it they can and the model is the limit (``--fixed``: ``gpu_bound``, or
``cpu_compute`` on the CPU). The job times its own wait for batches (``wait_share``).
CUDA: d_model 1024, 8 layers, 16 heads, context 512, batch 32; CPU: d_model 64, 2 layers, context
64, batch 8, one intra-op thread and one worker (two cores).
"""

from __future__ import annotations

import os
import random
import sys
import time

if __package__ in (None, ""):  # run as a file: make `bench` importable
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))

os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")  # one thread per worker; no fork warning

import torch
from torch.utils.data import DataLoader, Dataset

from bench.scenarios._common import Meter, cpu_threads, model_bound, run_main, spare_one_core

STAGE = "decode"
DEVICES = ("cpu", "cuda")
VOCAB = 8000
SHAPES = {  # device -> d_model, layers, heads, context, batch
    "cuda": (1024, 8, 16, 512, 32),
    "cpu": (64, 2, 4, 64, 8),
}
SYLLABLES = ("ka", "to", "ri", "me", "su", "lo", "na", "de", "pi", "ga", "vu", "shi", "ren", "mon", "tar",
             "qui", "bel", "sor", "ex", "ion", "al", "ung", "ed", "an")
DOCS = 512
"""Distinct documents in the corpus (items cycle through them; each worker tokenises every time)."""


def add_arguments(p) -> None:
    p.add_argument("--workers", type=int, default=None,
                   help="tokenising DataLoader workers (default 2 on CUDA, 1 on the CPU)")
    p.add_argument("--ratio", type=float, default=None,
                   help="one worker's tokenising time per batch / the model's step time (default 6 on CUDA, 3 on the CPU)")
    p.add_argument("--fixed", action="store_true", help="ground truth: the workers keep up (use with enough workers)")
    p.add_argument("--words", type=int, default=None, help="words per document (default: from --ratio, measured)")


def _words(seed: int = 0, n: int = 20000) -> tuple[list[str], list[float]]:
    rng = random.Random(seed)
    words = sorted({"".join(rng.choice(SYLLABLES) for _ in range(rng.randint(1, 4))) for _ in range(n)})
    rng.shuffle(words)
    return words, [1.0 / (i + 1) for i in range(len(words))]


def make_corpus(n_docs: int, words_per_doc: int, seed: int = 0) -> list[str]:
    words, weights = _words(seed)
    rng = random.Random(seed + 1)
    out = []
    for _ in range(n_docs):
        ws = rng.choices(words, weights, k=words_per_doc)
        for j in range(0, len(ws), rng.randint(12, 30)):  # sentences
            ws[j] = ws[j].capitalize()
        out.append(" ".join(ws) + ".")
    return out


def train_tokenizer(docs: list[str]):
    from tokenizers import Tokenizer, models, normalizers, pre_tokenizers, trainers

    tok = Tokenizer(models.BPE(unk_token="[UNK]"))
    tok.normalizer = normalizers.Sequence([normalizers.NFKC(), normalizers.Lowercase()])
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    tok.train_from_iterator(docs, trainers.BpeTrainer(vocab_size=VOCAB, special_tokens=["[PAD]", "[UNK]"]))
    return tok


class Documents(Dataset):
    """Tokenises one whole document per item, in the worker, and truncates it to the context."""

    def __init__(self, docs: list[str], tokenizer, context: int) -> None:
        self.docs, self.tok, self.context = docs, tokenizer, context

    def __len__(self) -> int:
        return 1 << 30

    def __getitem__(self, i: int) -> torch.Tensor:
        ids = self.tok.encode(self.docs[i % len(self.docs)]).ids[: self.context + 1]
        return torch.tensor(ids, dtype=torch.long)


def pad_collate(items: list[torch.Tensor]) -> torch.Tensor:
    return torch.nn.utils.rnn.pad_sequence(items, batch_first=True, padding_value=0)


class TinyLM(torch.nn.Module):
    def __init__(self, d: int, layers: int, heads: int, context: int) -> None:
        super().__init__()
        self.embed = torch.nn.Embedding(VOCAB, d)
        self.pos = torch.nn.Parameter(torch.zeros(context, d))
        layer = torch.nn.TransformerEncoderLayer(d, heads, 4 * d, dropout=0.0, batch_first=True, norm_first=True)
        self.body = torch.nn.TransformerEncoder(layer, layers, enable_nested_tensor=False)
        self.head = torch.nn.Linear(d, VOCAB)

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        n = ids.shape[1]
        mask = torch.ones(n, n, dtype=torch.bool, device=ids.device).triu(1)  # True: a later token, hidden
        return self.head(self.body(self.embed(ids) + self.pos[:n], mask=mask, is_causal=True))


class TokenizeJob:
    name = "text_tokens"

    def __init__(self, args, device: str) -> None:
        import tokenizers

        self.device = device
        d, layers, heads, self.context, self.batch = SHAPES[device]
        default_workers = 2 if device == "cuda" else 1
        self.workers = max(1, min(args.workers or default_workers, spare_one_core()))
        ratio = args.ratio or (6.0 if device == "cuda" else 3.0)
        t0 = time.time()
        self.model = TinyLM(d, layers, heads, self.context).to(device)
        self.opt = torch.optim.AdamW(self.model.parameters(), lr=3e-4)
        tok = train_tokenizer(make_corpus(32, 1000, seed=7))
        with cpu_threads(device):
            step_s = self._time_steps()
        words = args.words
        if words is None:  # tokenising time per word, measured on one batch of 1000-word documents
            probe = make_corpus(self.batch, 1000, seed=11)
            t = time.perf_counter()
            for doc in probe:
                tok.encode(doc)
            per_word = (time.perf_counter() - t) / (self.batch * 1000)
            words = max(self.context, int(ratio * step_s / (per_word * self.batch)))
        self.dataset = Documents(make_corpus(DOCS, words), tok, self.context)
        self.facts = {
            "workers": self.workers, "ratio": ratio, "words_per_doc": words, "context": self.context,
            "batch": self.batch, "model_step_ms": round(step_s * 1e3, 2), "d_model": d, "layers": layers,
            "tokenizers": tokenizers.__version__, "setup_s": round(time.time() - t0, 1),
        }
        self.result: dict = {}

    def _step(self, ids: torch.Tensor) -> None:
        ids = ids.to(self.device, non_blocking=True)
        x, y = ids[:, :-1], ids[:, 1:]
        with torch.autocast(self.device, dtype=torch.bfloat16, enabled=self.device == "cuda"):
            logits = self.model(x)
        loss = torch.nn.functional.cross_entropy(logits.float().reshape(-1, VOCAB), y.reshape(-1), ignore_index=0)
        self.opt.zero_grad(set_to_none=True)
        loss.backward()
        self.opt.step()
        loss.item()

    def _time_steps(self, n: int = 6) -> float:
        ids = torch.randint(2, VOCAB, (self.batch, self.context + 1))
        self._step(ids)  # warm-up (kernels, allocator)
        t = time.perf_counter()
        for _ in range(n):
            self._step(ids)
        return (time.perf_counter() - t) / n

    def run(self, until: float, meter: Meter) -> None:
        loader = DataLoader(self.dataset, batch_size=self.batch, num_workers=self.workers, collate_fn=pad_collate,
                            pin_memory=self.device == "cuda", persistent_workers=False)
        waited = 0.0
        t_start = time.perf_counter()
        it = iter(loader)
        with cpu_threads(self.device):
            try:
                while time.time() < until:
                    t = time.perf_counter()
                    ids = next(it)
                    waited += time.perf_counter() - t
                    self._step(ids)
                    meter.step()
            finally:
                del it
        total = max(1e-9, time.perf_counter() - t_start)
        self.result = {"steps_per_s": round(meter.steps / total, 3), "wait_share": round(waited / total, 3),
                       "train_s": round(total, 1)}

    def close(self) -> None:
        pass


def build(args, device: str) -> TokenizeJob:
    return TokenizeJob(args, device)


def truth_for(args, device: str) -> str:
    return model_bound(device) if args.fixed else STAGE


if __name__ == "__main__":
    sys.exit(run_main(sys.modules[__name__]))
