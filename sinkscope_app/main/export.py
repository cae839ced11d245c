"""The main page's exports: the plans, marginals, everything as JSON or NPZ, this view as
an HTML report, and the Sentences ranking; each file made on its button's click."""

from __future__ import annotations

from urllib.parse import urlencode

import streamlit as st

from engine.io.export import marginals_csv, plans_csv, to_npz

from .. import metrics, report
from . import calls
from .params import to_query


def share_url() -> str:
    """The address of this view, as a link to share."""
    try:
        base = st.context.url or ""
    except Exception:
        base = ""
    return f"{base.split('?')[0]}?{urlencode(to_query(st.session_state))}" if base else ""


def _ranking(r, ctx, url: str) -> None:
    """The Sentences view's ranking, with its settings (read now: the files are made on a
    click, outside this run)."""
    ss, x = st.session_state, ctx.w["export"]
    cands, eps = str(ss.get("cands", "")), float(ss["eps"])

    def ranking():
        return calls.ranking(ctx.model, ctx.a, cands, eps)

    stem = f"sinkscope_ranking_{report.texts_hash(r)}_eps{eps:g}"
    st.download_button(x["ranking_csv"], lambda: report.ranking_csv(ranking(), url=url),
                       f"{stem}.csv", "text/csv", key="dl_ranking_csv", on_click="ignore",
                       width="stretch")
    st.download_button(x["ranking_json"], lambda: report.ranking_json(ranking(), url=url),
                       f"{stem}.json", "application/json", key="dl_ranking_json",
                       on_click="ignore", width="stretch")


def buttons(r, ctx, view: str, figs: list) -> None:
    """Every export button of the view ``view`` of relation ``r``."""
    x = ctx.w["export"]
    stem, url = report.slug(r), share_url()
    if view == "sentences":
        _ranking(r, ctx, url)
    st.download_button(x["plans"], lambda: plans_csv(r), f"{stem}_plans.csv", "text/csv",
                       key="dl_plans", on_click="ignore", width="stretch")
    st.download_button(x["marginals"], lambda: marginals_csv(r), f"{stem}_marginals.csv",
                       "text/csv", key="dl_marginals", on_click="ignore", width="stretch")
    st.download_button(x["json"], lambda: report.relation_json(r, url), f"{stem}.json",
                       "application/json", key="dl_json", on_click="ignore", width="stretch")
    st.download_button(x["npz"], lambda: to_npz(r, url=url), f"{stem}.npz",
                       "application/octet-stream", key="dl_npz", on_click="ignore",
                       width="stretch")
    title = f"sinkscope · {ctx.w['views'][view]}"
    st.download_button(
        x["html"], lambda: report.html_report(r, figs, metrics.table(r, ctx.lang), url=url,
                                              title=title),
        f"{stem}_{view}.html", "text/html", key="dl_html", on_click="ignore", width="stretch")
    st.caption(x["caption"])
