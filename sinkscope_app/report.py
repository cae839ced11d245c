"""Exports of the current view: file names and a self-contained HTML report."""

from __future__ import annotations

import datetime as _dt
import hashlib
import html
import json
import re
from collections.abc import Sequence

import plotly.graph_objects as go
import plotly.io as pio

from engine.io.export import relation_to_dict
from engine.types import Relation
from viz.theme import plotly_config


def texts_hash(r: Relation) -> str:
    """8 hex digits that tell two pairs of texts apart."""
    return hashlib.sha1(f"{r.text_a}\x1f{r.text_b}".encode("utf-8", "replace")).hexdigest()[:8]


def slug(r: Relation) -> str:
    """A file-name stem naming the texts (a short hash) and the settings, e.g.
    ``sinkscope_3f2a9c1e_separate_L5_hmean_eps1_t100``."""
    s = (f"sinkscope_{texts_hash(r)}_{r.mode}_L{r.layer}_h{r.head}_eps{r.eps:g}"
         f"_t{r.half_steps}")
    return re.sub(r"[^A-Za-z0-9_.-]", "-", s)


def relation_json(r: Relation, url: str = "") -> str:
    """The relation as JSON with its texts, settings, versions and link (strict: no NaN;
    −inf potentials become null)."""
    return json.dumps(relation_to_dict(r, url=url), ensure_ascii=False, allow_nan=False,
                      indent=1)


def _rows(pairs: Sequence[tuple[str, str]]) -> str:
    return "\n".join(f"<tr><th>{html.escape(k)}</th><td>{html.escape(v)}</td></tr>"
                     for k, v in pairs)


def html_report(r: Relation, figures: Sequence[go.Figure], metrics: Sequence[tuple[str, str]],
                *, url: str = "", title: str = "sinkscope report") -> str:
    """A single HTML file (plotly.js inlined once) with the texts, settings, metrics and
    the current view's figures. Every user-supplied string is escaped."""
    settings = [("model", r.model), ("mode", r.mode), ("layer", str(r.layer)),
                ("head", str(r.head)), ("ε", f"{r.eps:g}"),
                ("half-steps", f"{r.half_steps} (run: {r.coupling.half_steps_run})"),
                ("weights", r.weights), ("word pooling", str(r.pool_words)),
                ("tokens", f"A: {len(r.tokens_a)}, B: {len(r.tokens_b)}")]
    parts = []
    for k, fig in enumerate(figures):
        parts.append(pio.to_html(fig, include_plotlyjs=(k == 0), full_html=False,
                                 config=plotly_config("png", f"report_{k}")))
    notices = "".join(f"<li>{html.escape(n.message)}</li>" for n in r.notices)
    link = (f'<p>Open this view: <a href="{html.escape(url, quote=True)}">'
            f"{html.escape(url)}</a></p>" if url else "")
    stamp = _dt.datetime.now().strftime("%Y-%m-%d %H:%M")
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<title>{html.escape(title)}</title>
<style>
body {{ font-family: Inter, "Helvetica Neue", Arial, sans-serif; max-width: 1200px;
       margin: 2em auto; padding: 0 1em; color: #222; }}
pre {{ white-space: pre-wrap; background: #f5f5f5; padding: .6em; border-radius: 4px; }}
a {{ overflow-wrap: anywhere; word-break: break-all; }}
table {{ border-collapse: collapse; margin: .5em 0 1em; }}
th, td {{ text-align: left; padding: .2em .8em; border-bottom: 1px solid #ddd; }}
</style></head><body>
<h1>{html.escape(title)}</h1>
<p>Softmax attention beside the Sinkhorn coupling · generated {stamp}</p>
{link}
<h2>Texts</h2>
<p><b>Text A</b></p><pre>{html.escape(r.text_a)}</pre>
<p><b>Text B</b></p><pre>{html.escape(r.text_b)}</pre>
<h2>Settings</h2><table>{_rows(settings)}</table>
<h2>Metrics</h2><table>{_rows(metrics)}</table>
{f"<ul>{notices}</ul>" if notices else ""}
<h2>Figures</h2>
{"".join(parts)}
</body></html>"""


def _ranking_rows(rk) -> list[dict]:
    """One row per candidate, in the divergence's order: both scores and both places."""
    place_div = {int(k): p for p, k in enumerate(rk.by_divergence, 1)}
    rank_sim = [int(x) for x in rk.rank_similarity]
    rows = []
    for k in [int(k) for k in rk.by_divergence]:
        rows.append({"candidate": k + 1, "text": rk.candidates[k],
                     "cosine_similarity": float(rk.similarity[k]),
                     "rank_by_similarity": rank_sim[k],
                     "sinkhorn_divergence": float(rk.divergence[k]),
                     "rank_by_divergence": place_div[k],
                     "converged": bool(rk.converged[k])})
    return rows


def ranking_settings(rk, *, url: str = "") -> dict:
    """What a ranking was computed with (the model, ε, the cost and the measures)."""
    return {"model": rk.model, "eps": float(rk.eps), "pooling": rk.pooling,
            "cost": "1 - cos between last hidden states",
            "measures": "each text's last hidden states, every token weighing the same",
            "divergence": "S_eps = OT_eps(A, k) - OT_eps(A, A)/2 - OT_eps(k, k)/2",
            "text_a": rk.text_a, "url": url}


def ranking_csv(rk, *, url: str = "") -> str:
    """The Sentences view's ranking as CSV: the settings as ``# key: value`` lines, then
    one row per candidate (smallest divergence first) with both scores and both ranks."""
    import csv
    import io

    buf = io.StringIO()
    for k, v in ranking_settings(rk, url=url).items():
        buf.write(f"# {k}: {' '.join(str(v).split())}\n")
    rows = _ranking_rows(rk)
    w = csv.DictWriter(buf, fieldnames=list(rows[0]) if rows else ["candidate"],
                       lineterminator="\n")
    w.writeheader()
    for row in rows:
        w.writerow({**row, "cosine_similarity": f"{row['cosine_similarity']:.6g}",
                    "sinkhorn_divergence": f"{row['sinkhorn_divergence']:.6g}"})
    return buf.getvalue()


def ranking_json(rk, *, url: str = "") -> str:
    """The Sentences view's ranking as JSON: settings, Spearman ρ and the candidates
    (strict JSON: a ρ that is undefined is null)."""
    rho = float(rk.spearman)
    return json.dumps({"settings": ranking_settings(rk, url=url),
                       "spearman": rho if rho == rho and abs(rho) != float("inf") else None,
                       "candidates": _ranking_rows(rk)},
                      ensure_ascii=False, allow_nan=False, indent=1)
