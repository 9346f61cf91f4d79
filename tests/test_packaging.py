"""What `pip install .` (not only an editable install) puts in the package: every data file the code reads."""

from __future__ import annotations

import fnmatch
from pathlib import Path

import tomllib

REPO = Path(__file__).resolve().parents[1]


def _folder(package: str, package_dir: dict[str, str]) -> Path:
    owner = max((p for p in package_dir if package == p or package.startswith(p + ".")), key=len)
    return REPO / package_dir[owner] / package[len(owner) + 1 :].replace(".", "/")


def test_every_data_file_in_a_package_folder_is_package_data() -> None:
    # The seed patterns once lived outside package-data: an installed kmedic opened an empty knowledge base.
    tool = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["setuptools"]
    missing = []
    for package in tool["packages"]:
        root = _folder(package, tool["package-dir"])
        globs = tool.get("package-data", {}).get(package, [])
        for path in root.rglob("*"):
            relative = path.relative_to(root)
            if (root / relative.parts[0] / "__init__.py").exists():
                continue  # a sub-package's files are checked under its own name
            if path.is_file() and path.suffix not in (".py", ".pyc") and "__pycache__" not in relative.parts:
                if not any(fnmatch.fnmatch(relative.as_posix(), g) for g in globs):
                    missing.append(f"{package}: {relative}")
    assert not missing, missing
