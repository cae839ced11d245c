"""sinkscope — see how a transformer relates two texts: softmax attention beside Sinkhorn
couplings. Run with ``make run`` (or ``streamlit run app.py``).

This file only wires widgets (fixed keys, mirrored in the URL) to cached engine calls
(``sinkscope_app.compute``) and to figures from ``viz`` (``sinkscope_app.views``).
The sidebar holds the texts and the model settings (a change re-runs the page); the ε and
half-step sliders, the metrics and the views live in one ``st.fragment``. The sliders are
live (``sinkscope_app.scrub``): while they move the browser redraws from every precomputed
frame; a release re-runs only the fragment, which never re-encodes the texts.
"""

from __future__ import annotations

import dataclasses
import logging

from engine import settings

settings.quiet_libraries()  # first: offline, no telemetry, before a library reads its environment

import streamlit as st  # noqa: E402

from engine import SinkscopeError
from engine.serving.client import EngineUnavailable
from engine.io.export import marginals_csv, plans_csv, to_npz
from sinkscope_app import (compute, examples, history, live, metrics, outage, present, report,
                           scrub, views)
from sinkscope_app.state import (DEFAULTS, EPS_OPTIONS, HALF_STEP_OPTIONS, IMAGE_FORMATS,
                                 KEYS, MODES, VIEWS, WEIGHTS, cut_text, describe_setting,
                                 example_differences, example_values,
                                 parse_query, to_query, valid_text)

log = logging.getLogger("sinkscope.app")
# A presentation link (?present=on) opens with the sidebar folded away, as Learn's does.
st.set_page_config(page_title="sinkscope · softmax vs Sinkhorn", page_icon="🔗",
                   layout="wide", initial_sidebar_state="collapsed"
                   if present.link(st.query_params.get("present")) else "expanded")

EXAMPLES = examples.load()
MODELS = compute.model_names()
ss = st.session_state


# --------------------------------------------------------------------------- state
def model_from_url() -> str:
    m = st.query_params.get("model", ss.get("model", DEFAULTS["model"]))
    return m if m in MODELS else DEFAULTS["model"]


def init_state(n_layers: int, n_heads: int) -> None:
    """Once per session, and again when Back or Forward opens another history entry:
    defaults, then whatever a (possibly hostile) URL asks for."""
    # A bare address opens the default example at the settings that show its point.
    params = st.query_params.to_dict() or {"ex": DEFAULTS["ex"]}
    parsed = parse_query(params, n_layers=n_layers, n_heads=n_heads, models=MODELS,
                         examples=EXAMPLES)
    for k, v in DEFAULTS.items():
        ss.setdefault(k, v)
    ss.update(parsed.values)
    if ss["layer"] == -1:
        ss["layer"] = n_layers - 1
    if "_init" not in ss and not st.query_params and compute.link_was_dropped():
        parsed.warnings.append(
            "This link was too long to open (over 512 Ki characters, the most Streamlit "
            f"accepts), so the default view is shown. Texts keep at most "
            f"{settings.CONFIG.max_chars:,} characters: share a link with shorter texts.")
    ss["_url_warnings"] = parsed.warnings
    ss["_init"] = True


def keep_state() -> None:
    """Keep every control's value across runs, even while its widget is not shown
    (Streamlit forgets the state of widgets that are not drawn in a run)."""
    for k in KEYS:
        if k in ss:
            ss[k] = ss[k]


def sync_url() -> None:
    """Write every control into the query string (only when something changed)."""
    q = to_query(ss)
    if st.query_params.to_dict() != q:
        st.query_params.from_dict(q)


def on_example() -> None:
    ex = EXAMPLES.get(ss["ex"])
    if ex:
        ss.update(example_values(ex, ss["mode"]))
    elif ss["ex"] == "custom":
        own_texts(ss.get("_shown_ex"))


def on_text() -> None:
    ex = EXAMPLES.get(ss.get("ex"))
    if ex and (ss["a"] != ex["a"] or (ss["mode"] != "self" and ss["b"] != ex["b"])):
        ss["ex"] = "custom"
        own_texts(ex)


def own_texts(example) -> None:
    """Your own texts start from the model's own attention (ε = 1), and the page says which
    of the example's settings were kept (at ε = 0.1, softmax is the model's attention
    sharpened tenfold, not the model's own)."""
    example = EXAMPLES.get(example) if isinstance(example, str) else example
    if not example:
        return
    kept = [describe_setting(k, ss[k]) for k in ("layer", "head", "steps", "pool")
            if k in example.get("settings", {}) and k in ss]
    was, own = float(ss["eps"]), DEFAULTS["eps"]
    ss["eps"] = own
    ss.setdefault("_infos", []).append(
        "Your own texts start from the model's own attention: "
        + (f"ε set back to {own:g} (it was {was:g}). " if was != own else f"ε = {own:g}. ")
        + (f"Kept from the example: {', '.join(kept)}." if kept else ""))


def own_attention() -> None:
    """One click back to the model's own attention: ε = 1 (softmax is then the model's)."""
    ss["eps"] = DEFAULTS["eps"]


def example_note(n_layers: int) -> tuple[str, str] | None:
    """("note", text) while the page shows the chosen example at the settings its note
    describes; ("differs", what it describes) when other settings are shown; else None."""
    ex = EXAMPLES.get(ss.get("ex"))
    if not ex or not ex.get("note"):
        return None
    differ = example_differences(ex, ss, n_layers=n_layers)
    if not differ:
        return "note", ex["note"]
    want = ", ".join(describe_setting(k, v) for k, v in ex["settings"].items())
    return "differs", want


# --------------------------------------------------------------------------- model
# A change of example or view is a browser history entry (Back and Forward walk through
# them and re-read the state from the address); other controls rewrite the address in place.
history.track({"ex": None, "view": "compare"})
back_or_forward = history.navigated() and "_init" in ss
model = model_from_url() if "_init" not in ss or back_or_forward else ss["model"]
try:
    with st.spinner(f"Loading the model {model} (first start only, a few seconds)…"):
        enc = compute.encoder(model)
except SinkscopeError as e:
    st.error(f"The model could not be loaded. {e}")
    st.stop()
except EngineUnavailable as e:  # a served engine that has not answered yet
    outage.notice(e)
    st.stop()

if "_init" not in ss or back_or_forward:
    init_state(enc.n_layers, enc.n_heads)
keep_state()
if "_pending_lh" in ss:  # a click on the All heads grid
    ss["layer"], ss["head"] = ss.pop("_pending_lh")
if "_pending_state" in ss:  # a view set sidebar controls (Sentences: text B, example set)
    ss.update(ss.pop("_pending_state"))
# Texts that cannot be sent to a browser (lone surrogates) are mended, and a paste longer
# than the limit is cut to it with a notice (the boxes have no max_chars: Streamlit's
# browser side drops a whole paste that is too long, without a word).
for k, name in (("a", "Text A"), ("b", "Text B")):
    clean, notice = cut_text(valid_text(ss.get(k)), name, "as typed or pasted")
    if ss.get(k) != clean:
        ss[k] = clean
    if notice:
        ss.setdefault("_notices", []).append(notice)
ss["layer"] = min(max(int(ss["layer"]), 0), enc.n_layers - 1)
if ss["head"] != "mean" and not 0 <= int(ss["head"]) < enc.n_heads:
    ss["head"] = "mean"

theme = "dark" if getattr(st.context.theme, "type", None) == "dark" else "light"
present.style(bool(ss["present"]))

# --------------------------------------------------------------------------- sidebar
with st.sidebar:
    st.title("sinkscope")
    st.caption("How does a transformer relate two texts? Softmax attention beside the "
               "Sinkhorn coupling — the paper's measure-theoretic view, live.")
    st.page_link("pages/learn.py", label="Learn: from clouds of points to the Sinkhorn "
                 "Transformer (English, español)", icon=":material/school:")
    st.toggle("Presentation mode", key="present",
              help="For a projector: text of at least 18 px, and the sliders with both maps "
                   "on one 1920 × 1080 screen. It is in the page's address (present=true).")
    ex_opts = {**{k: v["title"] for k, v in EXAMPLES.items()}, "custom": "Your own texts"}
    st.selectbox("Example", list(ex_opts), format_func=ex_opts.get, key="ex",
                 on_change=on_example)
    limit = f"at most {settings.CONFIG.max_chars:,} characters (a longer paste is cut)"
    st.text_area("Text A (queries)", key="a", height=90, on_change=on_text,
                 help=f"Rows of every map; {limit}. Press Ctrl+Enter or click outside the "
                 "box to apply.")
    st.text_area("Text B (keys)", key="b", height=90, on_change=on_text,
                 disabled=ss["mode"] == "self",
                 help=f"Columns of every map; {limit}. Not used in self mode.")
    note = ss["_note_drawn"] = example_note(enc.n_layers)
    if note and note[0] == "note":
        st.caption(note[1])
    elif note:  # the note would describe another picture than the one shown
        st.caption(f"This example's note describes it at {note[1]}; the page shows other "
                   "settings.")
        st.button("Show the example at its settings", key="ex_settings", on_click=on_example,
                  width="stretch")

    st.subheader("Model view")
    if len(MODELS) > 1:
        st.selectbox("Model", MODELS, key="model", format_func=compute.model_label,
                     help="Any sentence-transformers model the operator allows "
                          "(SINKSCOPE_MODELS). Changing it keeps your texts.")
    st.radio("Mode", list(MODES), format_func=MODES.get, key="mode",
             help="Separate: each text encoded in its own context, queries of A against "
                  "keys of B (the paper's Q(μ, x), K(ν, y)). Joint: one forward pass of "
                  "[CLS] A [SEP] B [SEP]; also shows the model's own A→B attention. Self: "
                  "text A with itself.")
    c1, c2 = st.columns(2)
    c1.selectbox("Layer", list(range(enc.n_layers)), key="layer",
                 format_func=lambda l: f"{l} (last)" if l == enc.n_layers - 1 else str(l))
    c2.selectbox("Head", ["mean", *range(enc.n_heads)], key="head",
                 format_func=lambda h: "mean" if h == "mean" else str(h),
                 help="One head's scores QKᵀ/√d, or the mean of all heads' scores.")
    st.radio("Token weights a, b", list(WEIGHTS), format_func=WEIGHTS.get, key="weights",
             help="How much mass each token carries in its text's measure.")
    st.toggle("Pool subwords into words", key="pool",
              help="Merge word pieces (##ing) into words: labels joined, vectors averaged.")
    st.radio("Figure download format", IMAGE_FORMATS, key="img", horizontal=True,
             format_func=str.upper, help="What the camera button on each chart saves.")
    live.preload()  # fetch plotly.js while the texts are encoded
    cfg = settings.CONFIG
    st.caption(f"Limits: {cfg.max_chars:,} characters per text (the model reads at most "
               f"{enc.max_tokens} tokens), ε {cfg.eps_min:g}–{cfg.eps_max:g}, up to "
               f"{cfg.max_half_steps:,} half-steps. Engine: {compute.engine_label(enc)}.")

for w in [*ss.pop("_url_warnings", []), *ss.pop("_notices", [])]:
    st.warning(w)
for i in ss.pop("_infos", []):
    st.info(i)
ss["_shown_ex"] = ss["ex"]

text_a, mode = ss["a"], ss["mode"]
text_b = "" if mode == "self" else ss["b"]
ctx = views.Ctx(model=ss["model"], a=text_a, b=text_b, mode=mode, layer=int(ss["layer"]),
                head=ss["head"], weights=ss["weights"], pool=bool(ss["pool"]),
                n_layers=enc.n_layers, n_heads=enc.n_heads, present=bool(ss["present"]))

# --------------------------------------------------------------------------- encode
try:
    n_chars = len(text_a) + len(text_b)
    with st.spinner(f"Encoding the texts ({n_chars:,} characters) with {ctx.model}…"):
        compute.prepare(ctx.model, ctx.a, ctx.b, ctx.mode)
except SinkscopeError as e:
    st.error(str(e))
    sync_url()
    st.stop()
except EngineUnavailable:
    pass  # the sliders' fragment says so below, and keeps the sliders
else:  # a text the model mostly cannot read (another language, emoji): say so plainly
    for name, text in (("Text A", ctx.a), ("Text B", ctx.b)):
        notice = compute.vocabulary_notice(getattr(enc, "tokenizer", None), text, name,
                                           ctx.model)
        if notice:
            st.warning(notice)


# --------------------------------------------------------------------------- main area
def on_scrub() -> None:
    """A live slider was released on a new value: keep it (the URL, exports and the other
    views follow on this rerun)."""
    value = scrub.parse_value(ss.get("scrub"), EPS_OPTIONS, HALF_STEP_OPTIONS)
    if value is not None:
        ss["eps"], ss["steps"] = value


def live_sliders(ctx: views.Ctx, r) -> views.Ctx:
    """Both sliders and the metric strip (sinkscope_app.scrub); returns ``ctx`` naming the
    lattice of frames the charts may take from them (None above the size budget)."""
    n, m = r.scores.shape if r is not None else (0, 0)
    cap = settings.CONFIG.live_max_cells
    live = r is not None and n * m <= cap
    lattice = scrub.lattice_id(*ctx.geometry) if live else None
    scrub.sliders(key="scrub", eps=ss["eps"], steps=ss["steps"], eps_stops=EPS_OPTIONS,
                  step_stops=HALF_STEP_OPTIONS, lattice=lattice,
                  metrics=metrics.rows(r) if r is not None else [],
                  note="" if live or r is None else scrub.too_large_note(n, m, cap),
                  help=views.SLIDER_HELP, on_change=on_scrub)
    return dataclasses.replace(ctx, lattice=lattice)


@st.fragment
def explore(ctx: views.Ctx) -> None:
    """Sliders, metrics and the selected view; re-runs alone when a slider is released
    (while it moves, the browser redraws from the precomputed frames)."""
    for k in views.FRAGMENT_KEYS:
        if k in ss:
            ss[k] = ss[k]
    if example_note(ctx.n_layers) != ss.get("_note_drawn"):  # a slider moved off (or onto)
        st.rerun(scope="app")  # the example's settings: redraw the sidebar's note
    try:
        r, error = compute.relation(*ctx.geometry[:6], float(ss["eps"]), int(ss["steps"]),
                                    ctx.weights, ctx.pool), None
    except (SinkscopeError, EngineUnavailable) as e:
        r, error = None, e
    ctx = live_sliders(ctx, r)
    if r is None:  # the sliders stay; the page says what is wrong
        if isinstance(error, EngineUnavailable):
            outage.notice(error)
        else:
            st.error(str(error))
        sync_url()
        return
    for n in r.notices:
        (st.warning if n.level == "warning" else st.info)(n.message)
    if ss.get("ex") == "custom" and float(ss["eps"]) != DEFAULTS["eps"]:
        c1, c2 = st.columns([4, 1.3], vertical_alignment="center")
        c1.caption(f"Your own texts at ε = {float(ss['eps']):g}: softmax here is the model's "
                   f"attention {'sharpened' if ss['eps'] < 1 else 'flattened'} "
                   f"{max(float(ss['eps']), 1 / float(ss['eps'])):g}×, not its own (ε = 1).")
        c2.button("Model's own attention (ε = 1)", key="own_attention",
                  on_click=own_attention, width="stretch")

    top = st.columns([5, 1], vertical_alignment="bottom")
    with top[0]:
        view = st.segmented_control("View", list(VIEWS), format_func=VIEWS.get, key="view",
                                    required=True, label_visibility="collapsed")
    export = top[1].popover("⬇ Export", width="stretch")
    view = view if view in VIEWS else "compare"
    try:
        figs = views.RENDER[view](r, ctx, theme, ss["img"])
    except SinkscopeError as e:
        st.error(str(e))
        figs = []
    except EngineUnavailable as e:
        outage.notice(e)
        figs = []
    except Exception as e:  # never show a traceback to a visitor; log it for operators
        log.exception("view %s failed", view)
        st.error(f"This view could not be drawn ({type(e).__name__}: {e}). Try other "
                 "settings; the other views still work.")
        figs = []
    with export:
        stem, url = report.slug(r), _share_url()
        if view == "sentences":  # the ranking the view shows, with its settings
            cands, eps = str(ss.get("cands", "")), float(ss["eps"])  # read now: the files

            def ranking():  # are made on a click, outside this run
                return compute.ranking(ctx.model, ctx.a, cands, eps)
            rstem = f"sinkscope_ranking_{report.texts_hash(r)}_eps{eps:g}"
            st.download_button("Sentences ranking (CSV)",
                               lambda: report.ranking_csv(ranking(), url=url),
                               f"{rstem}.csv", "text/csv", key="dl_ranking_csv",
                               on_click="ignore", width="stretch")
            st.download_button("Sentences ranking (JSON)",
                               lambda: report.ranking_json(ranking(), url=url),
                               f"{rstem}.json", "application/json", key="dl_ranking_json",
                               on_click="ignore", width="stretch")
        st.download_button("Plans & scores (CSV)", lambda: plans_csv(r), f"{stem}_plans.csv",
                           "text/csv", key="dl_plans", on_click="ignore", width="stretch")
        st.download_button("Marginals (CSV)", lambda: marginals_csv(r),
                           f"{stem}_marginals.csv", "text/csv", key="dl_marginals",
                           on_click="ignore", width="stretch")
        st.download_button("Everything (JSON)", lambda: report.relation_json(r, url),
                           f"{stem}.json", "application/json", key="dl_json",
                           on_click="ignore", width="stretch")
        st.download_button("Arrays (NPZ)", lambda: to_npz(r, url=url), f"{stem}.npz",
                           "application/octet-stream", key="dl_npz", on_click="ignore",
                           width="stretch")
        st.download_button(
            "This view (HTML report)",
            lambda: report.html_report(r, figs, metrics.table(r), url=url,
                                       title=f"sinkscope · {VIEWS[view]}"),
            f"{stem}_{view}.html", "text/html", key="dl_html", on_click="ignore",
            width="stretch")
        st.caption("Figures: use the camera button on each chart (format in the sidebar). "
                   "To share this view, copy the page's address: every control is in it.")
    if ctx.lattice is not None:  # last, so the charts are out first
        try:
            payload = compute.lattice(*ctx.geometry, EPS_OPTIONS, HALF_STEP_OPTIONS)
        except Exception:  # the sliders keep working through the server
            log.exception("the live sliders' frames could not be computed")
            payload = None
        scrub.lattice_element(payload)
        if payload is not None and payload.note:
            st.caption(payload.note)
    sync_url()


def _share_url() -> str:
    try:
        base = st.context.url or ""
    except Exception:
        base = ""
    from urllib.parse import urlencode
    return f"{base.split('?')[0]}?{urlencode(to_query(ss))}" if base else ""


explore(ctx)
sync_url()
compute.umap_warmup()  # compiles UMAP in a background thread once per process, after the
# first page is out (compiling during the first run slowed it by seconds on 2 cores)
