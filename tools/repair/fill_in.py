"""Fill-in-the-middle prompts by model family: which models take one, and its special tokens."""

from __future__ import annotations

import re

FILL_IN_TEMPLATES: dict[str, str] = {
    # Qwen2.5-Coder's repository format: the reference as another file of the repository, then the kernel
    # file with its hole (the model was trained on both; the instruct variants keep it).
    "qwen-coder": (
        "<|repo_name|>kernels\n<|file_sep|>reference.py\n{reference}\n<|file_sep|>kernel.py\n"
        "<|fim_prefix|>{prefix}<|fim_suffix|>{suffix}<|fim_middle|>"
    ),
}
"""Fill-in-the-middle prompts by model family: `{reference}`, `{prefix}` and `{suffix}` are filled in."""

FILL_IN_STOPS: dict[str, list[str]] = {
    "qwen-coder": ["<|endoftext|>", "<|file_sep|>", "<|fim_prefix|>", "<|im_end|>", "<|repo_name|>"],
}
_FILL_IN_MODELS = {"qwen-coder": re.compile(r"qwen[\w.]*[-_ ]?coder", re.I)}
FILL_IN_CHOICES = ("auto", "off", *FILL_IN_TEMPLATES)


def fill_in_family(setting: str, model: str) -> str | None:
    """The fill-in template family `setting` names for `model`: None when off or no known family matches.
    Only families whose special tokens are known are recognised: a wrong template is noise to the model."""
    if setting == "off":
        return None
    if setting != "auto":
        if setting not in FILL_IN_TEMPLATES:
            choices = ", ".join(FILL_IN_CHOICES)
            raise ValueError(f"unknown fill-in family {setting!r}: expected one of {choices}")
        return setting
    return next((family for family, pattern in _FILL_IN_MODELS.items() if pattern.search(model)), None)
