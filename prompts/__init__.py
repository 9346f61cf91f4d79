"""LLM prompt templates as Markdown files, read with importlib.resources.

May import: nothing of kernel_medic
"""
