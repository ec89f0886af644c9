#!/usr/bin/env python3
"""Make tutorials/NN-*.ipynb from tutorials/NN-*.py (percent format: `# %%`
starts a code cell, `# %% [markdown]` a markdown cell whose lines drop their
leading `# `). Outputs already saved in a notebook are kept for every code
cell whose source did not change, so regenerating after a text edit keeps
the GPU outputs. Standard library only.

Usage: python3 tutorials/build_notebooks.py [--check]
  --check: exit 1 if a notebook's cells differ from its script (CI).
"""
import json, pathlib, sys

HERE = pathlib.Path(__file__).resolve().parent


def cells_of(text):
    """(kind, body, tags) per cell; `# %% tags=["a", "b"]` tags a code cell
    (jupytext's spelling; `tilebook-device-dependent` marks outputs that
    `notebook check` on another backend skips)."""
    cells, kind, lines, tags = [], None, [], []
    def flush():
        if kind is None:
            return
        body = "\n".join(lines).strip("\n")
        if kind == "markdown":
            body = "\n".join(l[2:] if l.startswith("# ") else l.lstrip("#") for l in body.split("\n"))
        cells.append((kind, body, tags))
    for line in text.split("\n"):
        if line.startswith("# %%"):
            flush()
            kind = "markdown" if "[markdown]" in line else "code"
            lines = []
            tags = json.loads(line.split("tags=", 1)[1]) if "tags=" in line else []
        else:
            lines.append(line)
    flush()
    return cells


def source(body):
    parts = body.split("\n")
    return [p + "\n" for p in parts[:-1]] + [parts[-1]]


def build(py, check):
    nb_path = py.with_suffix(".ipynb")
    old = json.loads(nb_path.read_text()) if nb_path.exists() else {"cells": []}
    saved = {"".join(c["source"]): c for c in old.get("cells", []) if c["cell_type"] == "code"}
    cells = []
    for kind, body, tags in cells_of(py.read_text()):
        if kind == "markdown":
            cells.append({"cell_type": "markdown", "metadata": {}, "source": source(body)})
        else:
            prev = saved.get("".join(source(body)))
            meta = dict(prev.get("metadata") or {}) if prev else {}
            if tags:
                meta["tags"] = tags
            cells.append({
                "cell_type": "code", "metadata": meta, "source": source(body),
                "execution_count": prev["execution_count"] if prev else None,
                "outputs": prev["outputs"] if prev else [],
            })
    if check:
        strip = lambda cs: [(c["cell_type"], "".join(c["source"]), c["metadata"].get("tags", []))
                            for c in cs]
        if strip(cells) != strip(old.get("cells", [])):
            print(f"{nb_path.name} does not match {py.name}: run python3 tutorials/build_notebooks.py")
            return False
        return True
    nb = {
        "cells": cells,
        "metadata": old.get("metadata") or {
            "kernelspec": {"name": "tilebook", "display_name": "Tile (tilebook)", "language": "python"},
            "language_info": {"name": "python", "file_extension": ".py", "mimetype": "text/x-python",
                              "codemirror_mode": "python", "pygments_lexer": "python"},
        },
        "nbformat": 4,
        "nbformat_minor": 5,
    }
    for i, c in enumerate(nb["cells"]):
        c["id"] = f"{py.stem[:2]}-{i:02d}"
    nb_path.write_text(json.dumps(nb, indent=1, ensure_ascii=False) + "\n")
    return True


check = "--check" in sys.argv
ok = all([build(p, check) for p in sorted(HERE.glob("[0-9][0-9]-*.py"))])
sys.exit(0 if ok else 1)
