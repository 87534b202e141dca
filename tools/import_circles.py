#!/usr/bin/env python3
"""Find import circles between the modules of a package; exit 1 when there is one.

    python3 tools/import_circles.py            # checks src/vpod
    python3 tools/import_circles.py SRC PACKAGE

A circle is a set of modules that import each other, directly or through
others, at import time. Imports under ``if TYPE_CHECKING:`` do not count
(they never run), and neither do package ``__init__`` modules, which only
re-export what lies below them. Generated protobuf modules are left out.
import-linter's layer contracts only see imports between packages; this
sees them between the modules of one package too (``scripts/test`` and a
test run it, so a circle fails CI).
"""

from __future__ import annotations

import ast
import sys
from collections.abc import Iterator
from pathlib import Path


def module_files(src: Path, package: str) -> dict[str, tuple[Path, bool]]:
    """Dotted module name -> (file, is a package's ``__init__``)."""
    found: dict[str, tuple[Path, bool]] = {}
    for path in sorted((src / package).rglob("*.py")):
        if "_pb2" in path.name:
            continue
        parts = list(path.relative_to(src).with_suffix("").parts)
        is_init = parts[-1] == "__init__"
        if is_init:
            parts.pop()
        found[".".join(parts)] = (path, is_init)
    return found


def _runtime_statements(body: list[ast.stmt]) -> Iterator[ast.stmt]:
    """Every statement that can run at import time or later, skipping TYPE_CHECKING blocks."""
    for node in body:
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            yield from _runtime_statements(node.orelse)
            continue
        yield node
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.stmt):
                yield from _runtime_statements([child])
            elif isinstance(child, ast.excepthandler):
                yield from _runtime_statements(child.body)


def imported_names(path: Path, module: str, is_init: bool) -> set[str]:
    """Dotted names a module imports: ``from a import b`` yields both ``a`` and ``a.b``."""
    here = module if is_init else module.rpartition(".")[0]
    names: set[str] = set()
    for node in _runtime_statements(ast.parse(path.read_text()).body):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = here.rsplit(".", node.level - 1)[0] if node.level > 1 else here
                base = f"{anchor}.{base}" if base else anchor
            names.add(base)
            names.update(f"{base}.{alias.name}" for alias in node.names)
    return names


def import_graph(src: Path, package: str) -> dict[str, set[str]]:
    files = module_files(src, package)
    packages = {name for name, (_, is_init) in files.items() if is_init}
    graph: dict[str, set[str]] = {}
    for name, (path, is_init) in files.items():
        if is_init:
            continue
        targets = imported_names(path, name, is_init)
        graph[name] = {t for t in targets if t in files and t not in packages and t != name}
    return graph


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected groups of more than one module (iterative Tarjan)."""
    order: dict[str, int] = {}
    lowest: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for root in sorted(graph):
        if root in order:
            continue
        work: list[tuple[str, Iterator[str]]] = [(root, iter(sorted(graph[root])))]
        order[root] = lowest[root] = len(order)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, pending = work[-1]
            step = next(pending, None)
            if step is not None:
                if step not in order:
                    order[step] = lowest[step] = len(order)
                    stack.append(step)
                    on_stack.add(step)
                    work.append((step, iter(sorted(graph[step]))))
                elif step in on_stack:
                    lowest[node] = min(lowest[node], order[step])
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                lowest[parent] = min(lowest[parent], lowest[node])
            if lowest[node] == order[node]:
                group: list[str] = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    group.append(member)
                    if member == node:
                        break
                if len(group) > 1:
                    found.append(sorted(group))
    return sorted(found)


def main(argv: list[str]) -> int:
    src = Path(argv[0]) if argv else Path(__file__).resolve().parent.parent / "src"
    package = argv[1] if len(argv) > 1 else "vpod"
    graph = import_graph(src, package)
    found = circles(graph)
    for group in found:
        print("import circle: " + " <-> ".join(group))
    print(f"{len(found)} import circle(s) among the {len(graph)} modules of {package}")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
