"""Plain-text rendering for the terminal: tables and decoded cases."""

from __future__ import annotations

from halbench.tasks.verify import CHECKS, FAMILIES


def table(headers: list[str], rows: list[list[str]]) -> str:
    widths = [max(len(str(x)) for x in col) for col in zip(headers, *rows, strict=True)]
    line = "  ".join("-" * w for w in widths)
    fmt = "  ".join(f"{{:<{w}}}" for w in widths)
    return "\n".join([fmt.format(*headers), line, *(fmt.format(*map(str, r)) for r in rows)])


def describe_case(record: dict) -> str:
    """A case as one line of tokens with causes, inert distractors and fixed markers marked, then its answers."""
    tokens = record.get("prompt_tokens") or [str(i) for i in record["prompt_ids"]]
    cause_of = {p: a for a, alt in enumerate(record["causes"]) for p in alt}
    decoys, editable = set(record.get("decoys") or []), set(record["editable"])
    many = len(record["causes"]) > 1
    shown = []
    for i, tok in enumerate(tokens):
        if i in cause_of:
            shown.append(f"[[{tok}]]{cause_of[i] + 1 if many else ''}")
        elif i in decoys:
            shown.append(f"~{tok}~")
        elif i not in editable:
            shown.append(f"<{tok}>")
        else:
            shown.append(tok)
    v = record["verification"]
    target = " ".join(record.get("target_tokens") or map(str, record["target_ids"]))
    faithful = " ".join(record.get("faithful_tokens") or []) or "-"
    lines = [
        f"{record['id']} ({', '.join(record.get('mechanisms', []))})",
        f"  {' '.join(shown)}",
        f"  -> hallucinated: {target} (p={v['p_target']:.2f})   faithful: {faithful}",
    ]
    for family in FAMILIES:
        rates = v.get(family) or {}
        checks = ", ".join(f"{k} {rates[k]:.2f}" for k in CHECKS if rates.get(k) is not None)
        lines.append(f"  verified ({family} refills): {checks}")
    return "\n".join(lines)
