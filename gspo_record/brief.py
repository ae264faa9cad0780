"""Each finding page's brief and the overview's At a glance rows, read from one place: :func:`headline.glance`.

A finding page opens the same way on every page (issue 36, item 2): the paper's claim, the design, the figure, the
result, the verdict and how sure, the caveats; the experiments, their rules and tables follow. The claim, the result,
the verdict and how sure are the page's At a glance row(s), so the overview and the page cannot say different things;
the rule ids behind a verdict go to a footnote on both.

- :func:`glance_rows` — the overview table's rows: the finding's title linked to its page, its "how sure" cell ending
  in a footnote mark ``[^rN]``, with :func:`glance_notes` the footnotes' text.
- :func:`briefs` — per finding page (its file's stem), the rows it holds, each with its footnote's label and text.
"""

from __future__ import annotations

__all__ = ["context", "glance_rows", "glance_notes", "briefs", "BEYOND"]

#: the claim a finding beyond the paper shows in place of the paper's (its At a glance row reads "—")
BEYOND = "none: this finding goes beyond the paper"


def _first_up(text: str) -> str:
    """``text`` with its first letter upper-case (a row's cells are phrases; the brief prints them as sentences)."""
    return text[:1].upper() + text[1:]


def _label(n: str) -> str:
    """A footnote label for At a glance row ``n`` ("2b" -> "r2b")."""
    return f"r{n}"


def glance_rows(glance: list[dict], where: dict[str, str]) -> list[list[str]]:
    """At a glance's table rows: [linked title, claim, number, verdict, how sure + footnote mark]."""
    return [[f"[**{r['n']}. {r['title']}**]({where[r['n']]})", r["claim"], r["number"], r["verdict"],
             f"{r['sure']}[^{_label(r['n'])}]"] for r in glance]  # fmt: skip


def glance_notes(glance: list[dict]) -> list[dict]:
    """The footnotes of :func:`glance_rows`: [{"label", "rules"}]."""
    return [{"label": _label(r["n"]), "rules": r["rules"]} for r in glance]


def briefs(glance: list[dict], pages: dict[tuple[str, ...], str]) -> dict[str, list[dict]]:
    """{page stem: [row]} for each finding page (``pages``: row numbers -> page file), each row its At a glance
    row plus ``claim`` (:data:`BEYOND` where the paper has none), ``lead`` ("2b: " where a page holds several rows,
    else ""), ``suffix`` (" 2b", or "") and its footnote ``note`` label."""
    by_n = {r["n"]: r for r in glance}
    out = {}
    for ns, page in pages.items():
        many = len(ns) > 1
        out[page.removesuffix(".md")] = [
            {
                **by_n[n],
                "claim": _first_up(BEYOND if by_n[n]["claim"] == "—" else by_n[n]["claim"]),
                "number": _first_up(by_n[n]["number"]),
                "lead": f"{n}: " if many else "",
                "suffix": f" {n}" if many else "",
                "note": f"rules{n}",
            }  # fmt: skip
            for n in ns
        ]
    return out


def context(glance: list[dict], where: dict[str, str], pages: dict[tuple[str, ...], str]) -> dict:
    """The page context's ``glance_rows``, ``glance_notes`` and ``brief`` (above)."""
    return {"glance_rows": glance_rows(glance, where), "glance_notes": glance_notes(glance),
            "brief": briefs(glance, pages)}  # fmt: skip
