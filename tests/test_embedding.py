"""The knowledge base's embedding gives the vectors sentence-transformers gives, without importing it.

tests/data/minilm_vectors.json holds what sentence-transformers computed for its texts with the packaged
all-MiniLM-L6-v2 (mean pooling, normalised); `computed_with` says which version.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import torch
from kernel_medic.vectordb.embedding import SEED_VECTORS, embed

RECORDED = json.loads((Path(__file__).parent / "data" / "minilm_vectors.json").read_text())


def test_vectors_match_what_sentence_transformers_computed() -> None:
    got = torch.tensor(embed(RECORDED["texts"]))
    want = torch.tensor(RECORDED["vectors"])
    assert got.shape == want.shape == (len(RECORDED["texts"]), 384)
    # the recorded vectors are rounded to 7 decimals; batching and padding move the last bits only
    assert (got - want).abs().max().item() < 1e-5
    assert torch.allclose(got.norm(dim=1), torch.ones(len(got)), atol=1e-5)


def test_a_sentence_embeds_the_same_alone_as_in_a_batch_of_longer_ones() -> None:
    # Padding to the batch's longest sentence must not move a shorter one (the mask keeps pads out).
    texts = RECORDED["texts"]
    batch = torch.tensor(embed(texts))
    for i, text in enumerate(texts):
        assert (torch.tensor(embed([text])[0]) - batch[i]).abs().max().item() < 1e-5


def test_related_texts_are_nearer_than_unrelated_ones() -> None:
    a, b, c = embed(
        [
            "padded lanes of the softmax row load feed tl.max with zeros",
            "the masked load before the row maximum uses other=0 instead of -inf",
            "a convolution's output length ignores the dilation",
        ]
    )
    dot = lambda u, v: sum(x * y for x, y in zip(u, v, strict=True))  # noqa: E731
    assert dot(a, b) > dot(a, c) + 0.1


def test_embedding_does_not_import_sentence_transformers_or_transformers() -> None:
    # Importing them costs seconds of CPU in every process that repairs; the model needs neither.
    code = (
        "import sys\n"
        "from kernel_medic.vectordb.embedding import embed\n"
        "assert len(embed(['x'])[0]) == 384\n"
        "print(sorted(m for m in ('sentence_transformers', 'transformers', 'sklearn') if m in sys.modules))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"


def test_the_shipped_seed_vectors_cover_every_seed_and_are_what_the_model_computes() -> None:
    from kernel_medic.vectordb.embedding import model, model_id, shipped_vectors, text_key
    from kernel_medic.vectordb.pattern import load_seeds

    table = json.loads(SEED_VECTORS.read_text())
    again = "python -m kernel_medic.vectordb.embedding --write-seed-vectors"
    assert table["model"] == model_id(), f"seed vectors from other weights: run {again}"
    texts = sorted({p.search_text() for p in load_seeds()})
    shipped = shipped_vectors()
    assert [t for t in texts if text_key(t) not in shipped] == [], f"seeds changed: run {again}"
    sample = texts[::4]  # every fourth: the model costs ~50 ms per seed text
    live = torch.tensor(model().encode(sample))
    assert (live - torch.tensor([shipped[text_key(t)] for t in sample])).abs().max().item() < 1e-5
    # a text the table does not hold is computed, not looked up
    assert embed([texts[0] + " (edited)"])[0] != shipped[text_key(texts[0])]
