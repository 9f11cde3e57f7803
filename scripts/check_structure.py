"""Structure checks of ``src/velyrix`` run by ``make lint`` (and by tests/test_structure.py):

1. no import cycle between modules, counting every import statement wherever it stands (module level or
   inside a function: a lazy import still ties two modules together); only imports under
   ``if TYPE_CHECKING:`` are left out (they never run). ``from pkg import name`` counts as an import of
   ``pkg.name`` when that is a module, else of ``pkg``;
2. no module over ``MAX_LINES`` lines;
3. the environment is read only in ``velyrix/settings.py`` (``os.environ[...]``, ``os.environ.get``,
   ``os.getenv``); writing it, or handing a copy of it to a child process, is not reading a setting.

Usage: ``python scripts/check_structure.py [SRC]``; prints each finding and exits 1 when there is one.
"""

from __future__ import annotations

import ast
import sys
from collections.abc import Iterator
from pathlib import Path

import networkx as nx

MAX_LINES = 450
"""The module size limit of TEAM.md and CONTRIBUTING.md (lines, as ``wc -l`` counts them)."""
SETTINGS_MODULE = "velyrix.settings"
ROOT = Path(__file__).resolve().parent.parent / "src"


def modules(src: Path = ROOT) -> dict[str, Path]:
    """Dotted module name -> file, for every ``.py`` under ``src/velyrix``."""
    found: dict[str, Path] = {}
    for path in sorted((src / "velyrix").rglob("*.py")):
        parts = list(path.relative_to(src).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        found[".".join(parts)] = path
    return found


def _runtime_nodes(tree: ast.AST) -> Iterator[ast.AST]:
    """Every node of ``tree`` except those under ``if TYPE_CHECKING:``."""
    stack = [tree]
    while stack:
        node = stack.pop()
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            stack.extend(node.orelse)
            continue
        yield node
        stack.extend(ast.iter_child_nodes(node))


def imports_of(name: str, path: Path, known: dict[str, Path]) -> set[str]:
    """The modules of ``known`` that module ``name`` (at ``path``) imports, anywhere in its code."""
    is_package = path.name == "__init__.py"
    package = name if is_package else name.rpartition(".")[0]
    out: set[str] = set()
    for node in _runtime_nodes(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            out.update(a.name for a in node.names if a.name in known)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                base = ".".join([*anchor, base] if base else anchor)
            for alias in node.names:
                target = f"{base}.{alias.name}"
                if target in known:
                    out.add(target)
                elif base in known:
                    out.add(base)
    out.discard(name)
    return out


def import_graph(src: Path = ROOT) -> nx.DiGraph:
    """Module -> imported module, over ``src/velyrix``."""
    known = modules(src)
    graph = nx.DiGraph()
    graph.add_nodes_from(known)
    for name, path in known.items():
        graph.add_edges_from((name, target) for target in imports_of(name, path, known))
    return graph


def cycles(src: Path = ROOT) -> list[list[str]]:
    """Each group of modules that import each other (directly or through others), sorted; [] when none."""
    groups = [sorted(c) for c in nx.strongly_connected_components(import_graph(src)) if len(c) > 1]
    return sorted(groups)


def oversized(src: Path = ROOT, limit: int = MAX_LINES) -> list[tuple[str, int]]:
    """``(module, lines)`` for each module over ``limit`` lines."""
    sizes = ((n, len(p.read_text().splitlines())) for n, p in modules(src).items())
    return sorted((n, lines) for n, lines in sizes if lines > limit)


def _reads_environment(node: ast.AST) -> bool:
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
        text = ast.unparse(node.func)
        return text in ("os.getenv", "os.environ.get", "environ.get", "getenv")
    if isinstance(node, ast.Subscript) and isinstance(node.ctx, ast.Load):
        return ast.unparse(node.value) in ("os.environ", "environ")
    return False


def environment_reads(src: Path = ROOT) -> list[str]:
    """``file:line`` of each read of the environment outside ``velyrix.settings``."""
    found = []
    for name, path in modules(src).items():
        if name == SETTINGS_MODULE:
            continue
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if _reads_environment(node):
                found.append(f"{path.relative_to(src)}:{getattr(node, 'lineno', 0)}")
    return sorted(found)


def main(argv: list[str]) -> int:
    src = Path(argv[1]) if len(argv) > 1 else ROOT
    problems = [f"import cycle: {' <-> '.join(c)}" for c in cycles(src)]
    problems += [f"{n}: {lines} lines (limit {MAX_LINES})" for n, lines in oversized(src)]
    problems += [f"{where}: reads the environment (only velyrix/settings.py may)" for where in environment_reads(src)]
    for p in problems:
        print(p)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
