"""The structure rules of CONTRIBUTING.md hold over ``src/velyrix`` (scripts/check_structure.py, also run by
``make lint``): no import cycle, lazy imports included; no module over 450 lines; the environment read only
in ``velyrix/settings.py``. Each rule is also shown to catch what it forbids, on a small tree of its own."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parent.parent


def _checker() -> ModuleType:
    spec = importlib.util.spec_from_file_location("check_structure", ROOT / "scripts" / "check_structure.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _tree(tmp_path: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        path = tmp_path / "velyrix" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return tmp_path


def test_src_has_no_import_cycle_no_oversized_module_and_reads_the_environment_only_in_settings() -> None:
    check = _checker()
    assert check.cycles() == []
    assert check.oversized() == []
    assert check.environment_reads() == []  # main() is these three (shown on small trees below): not run again


def test_a_lazy_import_that_closes_a_circle_is_a_cycle(tmp_path: Path) -> None:
    src = _tree(
        tmp_path,
        {
            "__init__.py": "",
            "a.py": "from velyrix import b\n",
            "b.py": "def f():\n    from velyrix.a import x\n",
            "c.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from velyrix import a\n",
        },
    )
    assert _checker().cycles(src) == [["velyrix.a", "velyrix.b"]]


def test_long_modules_and_environment_reads_are_found(tmp_path: Path) -> None:
    src = _tree(
        tmp_path,
        {
            "__init__.py": "",
            "settings.py": "import os\nX = os.environ.get('A')\n",
            "big.py": "x = 1\n" * 451,
            "env.py": "import os\nA = os.environ['A']\nB = os.getenv('B')\nos.environ['C'] = '1'\n",
        },
    )
    check = _checker()
    assert check.oversized(src) == [("velyrix.big", 451)]
    assert check.environment_reads(src) == ["velyrix/env.py:2", "velyrix/env.py:3"]
    assert check.main(["check_structure.py", str(src)]) == 1
