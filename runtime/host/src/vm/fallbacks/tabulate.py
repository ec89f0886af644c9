"""tilebook's stand-in for the `tabulate` package, used when the package is
not installed (an installed `tabulate` on sys.path is imported instead).

`tabulate(rows, headers=..., tablefmt=...)` formats a list of rows, a list
of dicts or a dict of columns as text. Numbers are recognized in every
column (also numeric strings), formatted with `floatfmt`/`intfmt`, and
aligned on the decimal point; other cells are left-aligned. Formats:
"simple" (the default), "plain", "github", "pipe", "grid"."""

__all__ = ["tabulate"]
FORMATS = ("simple", "plain", "github", "pipe", "grid")


def _number(cell, numparse):
    if isinstance(cell, bool):
        return None
    if isinstance(cell, (int, float)):
        return cell
    if numparse and isinstance(cell, str):
        text = cell.strip()
        try:
            return int(text)
        except ValueError:
            pass
        try:
            return float(text)
        except ValueError:
            return None
    if hasattr(cell, "item") and hasattr(cell, "numel"):
        try:
            if cell.numel() == 1:
                return cell.item()
        except Exception:
            return None
    return None


def _rows_and_headers(data, headers, showindex):
    if hasattr(data, "keys") and hasattr(data, "values") and not isinstance(data, (list, tuple)):
        keys = list(data.keys())
        columns = [list(v) for v in data.values()]
        height = max([len(c) for c in columns] + [0])
        rows = [[c[i] if i < len(c) else None for c in columns] for i in range(height)]
        if headers == "keys":
            headers = [str(k) for k in keys]
    else:
        rows = []
        dict_keys = []
        for row in data:
            if hasattr(row, "keys") and hasattr(row, "get"):
                for k in row.keys():
                    if k not in dict_keys:
                        dict_keys.append(k)
                rows.append(row)
            else:
                rows.append(list(row))
        if dict_keys:
            rows = [[r.get(k) for k in dict_keys] if hasattr(r, "get") else r for r in rows]
            if headers == "keys":
                headers = [str(k) for k in dict_keys]
        if headers == "firstrow":
            headers = [str(h) for h in rows[0]] if rows else []
            rows = rows[1:]
        elif headers == "keys":
            width = max([len(r) for r in rows] + [0])
            headers = [str(i) for i in range(width)]
    headers = [str(h) for h in headers]
    if showindex is True or showindex == "always":
        rows = [[i] + list(r) for i, r in enumerate(rows)]
        if headers:
            headers = [""] + headers
    elif showindex not in (False, "default", "never", None):
        index = list(showindex)
        if len(index) != len(rows):
            raise ValueError("tabulate: showindex has %d values for %d rows" % (len(index), len(rows)))
        rows = [[i] + list(r) for i, r in zip(index, rows)]
        if headers:
            headers = [""] + headers
    return rows, headers


def _decimal_align(cells):
    def split(s):
        dot = s.find(".")
        if dot < 0:
            e = s.lower().find("e")
            return len(s) if e < 0 else e
        return dot

    after = max([len(s) - split(s) for s in cells] + [0])
    return [s + " " * (after - (len(s) - split(s))) for s in cells]


def tabulate(tabular_data, headers=(), tablefmt="simple", floatfmt="g", intfmt="",
             numalign="decimal", stralign="left", missingval="", showindex="default",
             disable_numparse=False, colalign=None, maxcolwidths=None):
    if tablefmt not in FORMATS:
        raise ValueError("tabulate: table format %r is not among tilebook's (%s)"
                         % (tablefmt, ", ".join(FORMATS)))
    rows, headers = _rows_and_headers(tabular_data, headers, showindex)
    ncols = max([len(r) for r in rows] + [len(headers)])
    rows = [list(r) + [None] * (ncols - len(r)) for r in rows]
    if headers and len(headers) < ncols:
        headers = [""] * (ncols - len(headers)) + headers
    columns = []
    aligns = []
    for c in range(ncols):
        cells = [r[c] for r in rows]
        numbers = [_number(x, not disable_numparse) for x in cells]
        present = [(x, n) for x, n in zip(cells, numbers) if x is not None and x != ""]
        numeric = bool(present) and all(n is not None for _, n in present)
        floats = numeric and any(isinstance(n, float) for _, n in present)
        out = []
        for x, n in zip(cells, numbers):
            if x is None or x == "":
                out.append(missingval if x is None else "")
            elif numeric and floats:
                out.append(format(float(n), floatfmt))
            elif numeric:
                out.append(format(n, intfmt))
            else:
                out.append(str(x))
        align = numalign if numeric else stralign
        if colalign is not None and c < len(colalign) and colalign[c] is not None:
            align = colalign[c]
        if align == "decimal":
            out = _decimal_align(out)
            align = "right"
        columns.append(out)
        aligns.append(align)
    widths = []
    for c in range(ncols):
        w = max([len(s) for s in columns[c]] + [0])
        if headers:
            w = max(w, len(headers[c]) + 2)
        widths.append(w)

    def pad(s, w, align):
        if align == "right":
            return s.rjust(w)
        if align == "center":
            return s.center(w)
        return s.ljust(w)

    body = [[pad(columns[c][i], widths[c], aligns[c]) for c in range(ncols)] for i in range(len(rows))]
    head = [pad(headers[c], widths[c], aligns[c] if aligns[c] != "right" else "right")
            for c in range(ncols)] if headers else None
    lines = []
    if tablefmt in ("simple", "plain"):
        rule = "  ".join("-" * w for w in widths)
        if head is not None:
            lines.append("  ".join(head))
            if tablefmt == "simple":
                lines.append(rule)
        elif tablefmt == "simple":
            lines.append(rule)
        lines += ["  ".join(r) for r in body]
        if head is None and tablefmt == "simple":
            lines.append(rule)
        return "\n".join(line.rstrip() for line in lines)
    if tablefmt in ("github", "pipe"):
        def marker(w, a):
            if tablefmt == "github":
                return "-" * (w + 2)
            if a == "right":
                return "-" * (w + 1) + ":"
            if a == "center":
                return ":" + "-" * w + ":"
            return ":" + "-" * (w + 1)
        if head is not None:
            lines.append("| " + " | ".join(head) + " |")
        lines.append("|" + "|".join(marker(w, a) for w, a in zip(widths, aligns)) + "|")
        lines += ["| " + " | ".join(r) + " |" for r in body]
        return "\n".join(lines)
    # grid
    rule = "+" + "+".join("-" * (w + 2) for w in widths) + "+"
    lines.append(rule)
    if head is not None:
        lines.append("| " + " | ".join(head) + " |")
        lines.append("+" + "+".join("=" * (w + 2) for w in widths) + "+")
    for r in body:
        lines.append("| " + " | ".join(r) + " |")
        lines.append(rule)
    return "\n".join(lines)
