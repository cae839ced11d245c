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
from engine.relation.summary import numbers
from sinkscope_app import (compute, examples, history, i18n, launch, live, metrics, notices,
                           outage, present, report, scrub, views)
from sinkscope_app.state import (DEFAULTS, EPS_OPTIONS, HALF_STEP_OPTIONS, IMAGE_FORMATS,
                                 KEYS, LANGS, MODES, cut_text,
                                 example_differences, example_values,
                                 parse_query, to_query, valid_text)

log = logging.getLogger("sinkscope.app")
ss = st.session_state


def lang() -> str:
    """The page's language: the picker's, else the address's (``?lang=es``), else English."""
    value = ss.get("lang") or st.query_params.get("lang")
    return value if value in LANGS else "en"


def words() -> dict:
    """Every word of the main page in its language (``sinkscope_app/text/main.<lang>.json``)."""
    return i18n.texts("main", lang())


def describe(key: str, value) -> str:
    """One setting in the page's words: "layer 4", "capa 4", "ε = 0,1"."""
    w, num = words()["settings"], numbers(lang())
    if key == "head":
        return w["head_mean"] if value == "mean" else w["head"].format(value=value)
    if key == "pool":
        return w["pooled" if value else "pieces"]
    shown = num(float(value)) if key == "eps" else num(int(value)) if key == "steps" else value
    return w[key].format(value=shown) if key in w else f"{key} {value}"


# A presentation link (?present=on) opens with the sidebar folded away, as Learn's does.
st.set_page_config(page_title=words()["page_title"], page_icon="🔗",
                   layout="wide", initial_sidebar_state="collapsed"
                   if present.link(st.query_params.get("present")) else "expanded")

EXAMPLES = examples.load()
MODELS = compute.model_names()


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
                         examples=EXAMPLES, lang=lang())
    for k, v in DEFAULTS.items():
        ss.setdefault(k, v)
    ss.update(parsed.values)
    if ss["layer"] == -1:
        ss["layer"] = n_layers - 1
    if "_init" not in ss and not st.query_params and compute.link_was_dropped():
        parsed.warnings.append(words()["notices"]["link_too_long"].format(
            chars=numbers(lang())(settings.CONFIG.max_chars)))
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
    kept = [describe(k, ss[k]) for k in ("layer", "head", "steps", "pool")
            if k in example.get("settings", {}) and k in ss]
    was, own = float(ss["eps"]), DEFAULTS["eps"]
    ss["eps"] = own
    w, num = words()["notices"], numbers(lang())
    ss.setdefault("_infos", []).append(
        w["own_texts"]
        + (w["eps_back"] if was != own else w["eps_same"]).format(own=num(own), was=num(was))
        + (w["kept"].format(kept=", ".join(kept)) if kept else ""))


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
        return "note", words()["examples"].get(ss["ex"], {}).get("note", ex["note"])
    want = ", ".join(describe(k, v) for k, v in ex["settings"].items())
    return "differs", want


# --------------------------------------------------------------------------- model
# A change of example or view is a browser history entry (Back and Forward walk through
# them and re-read the state from the address); other controls rewrite the address in place.
history.track({"ex": None, "view": "compare"})
back_or_forward = history.navigated() and "_init" in ss
model = model_from_url() if "_init" not in ss or back_or_forward else ss["model"]
try:  # its layers and heads at once (a file read); the model itself after the controls
    enc = compute.model_shape(model)
except SinkscopeError as e:
    st.error(words()["notices"]["model_error"].format(error=e))
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
    clean, notice = cut_text(valid_text(ss.get(k)), name, "as typed or pasted", lang=lang())
    if ss.get(k) != clean:
        ss[k] = clean
    if notice:
        ss.setdefault("_notices", []).append(notice)
ss["layer"] = min(max(int(ss["layer"]), 0), enc.n_layers - 1)
if ss["head"] != "mean" and not 0 <= int(ss["head"]) < enc.n_heads:
    ss["head"] = "mean"

# The controls are drawn from the model's shape; the model is awaited after them, and until
# the first coupling is out the charts' place says it is loading (`make run` starts loading
# it when the server starts: sinkscope_app.launch).
waiting = st.empty()


def load_model(model: str, shape):
    """The model itself, awaited once the controls are out (they were drawn from ``shape``)."""
    if not isinstance(shape, launch.Shape):
        return shape
    waiting.info(words()["notices"]["loading_model"].format(model=model),
                 icon=":material/hourglass_top:")
    try:
        return compute.encoder(model)
    except SinkscopeError as e:
        waiting.error(words()["notices"]["model_error"].format(error=e))
        st.stop()


theme = "dark" if getattr(st.context.theme, "type", None) == "dark" else "light"
present.style(bool(ss["present"]))

# --------------------------------------------------------------------------- sidebar
W, NUM = words(), numbers(lang())
side = W["sidebar"]
with st.sidebar:
    st.title("sinkscope")
    st.caption(side["caption"])
    st.segmented_control(side["language"], list(LANGS), format_func=LANGS.get, key="lang",
                         required=True)
    # In presentation mode the link's label is short enough for one line (nothing is cut).
    st.page_link("pages/learn.py", label=side["learn_link_short" if ss["present"]
                                             else "learn_link"],
                 icon=":material/school:", query_params={"lang": lang()})
    if not ss["present"]:
        st.page_link("pages/align.py", label=side["align_link"], icon=":material/link:",
                     query_params={"lang": lang()})
        st.page_link("pages/lab.py", label=side["lab_link"], icon=":material/model_training:",
                     query_params={"lang": lang()})
    st.toggle(side["present"], key="present", help=side["present_help"])
    ex_words = W["examples"]
    ex_opts = {**{k: ex_words.get(k, {}).get("title", v["title"]) for k, v in EXAMPLES.items()},
               "custom": side["custom"]}
    st.selectbox(side["example"], list(ex_opts), format_func=ex_opts.get, key="ex",
                 on_change=on_example)
    limit = side["limit"].format(chars=NUM(settings.CONFIG.max_chars))
    st.text_area(side["text_a"], key="a", height=90, on_change=on_text,
                 help=side["text_a_help"].format(limit=limit))
    st.text_area(side["text_b"], key="b", height=90, on_change=on_text,
                 disabled=ss["mode"] == "self", help=side["text_b_help"].format(limit=limit))
    note = ss["_note_drawn"] = example_note(enc.n_layers)
    if note and note[0] == "note":
        st.caption(note[1])
    elif note:  # the note would describe another picture than the one shown
        st.caption(side["note_differs"].format(settings=note[1]))
        st.button(side["show_settings"], key="ex_settings", on_click=on_example,
                  width="stretch")

    st.subheader(side["model_view"])
    if len(MODELS) > 1:
        st.selectbox(side["model"], MODELS, key="model", format_func=compute.model_label,
                     help=side["model_help"])
    st.radio(side["mode"], list(MODES), format_func=side["modes"].get, key="mode",
             help=side["mode_help"])
    c1, c2 = st.columns(2)
    c1.selectbox(side["layer"], list(range(enc.n_layers)), key="layer",
                 format_func=lambda l: side["last"].format(layer=l) if l == enc.n_layers - 1
                 else str(l))
    c2.selectbox(side["head"], ["mean", *range(enc.n_heads)], key="head",
                 format_func=lambda h: side["mean"] if h == "mean" else str(h),
                 help=side["head_help"])
    st.radio(side["weights"], list(side["weight_opts"]), format_func=side["weight_opts"].get,
             key="weights", help=side["weights_help"])
    st.toggle(side["pool"], key="pool", help=side["pool_help"])
    st.radio(side["img"], IMAGE_FORMATS, key="img", horizontal=True,
             format_func=str.upper, help=side["img_help"])
    live.preload()  # fetch plotly.js while the texts are encoded
enc = load_model(model, enc)
with st.sidebar:
    cfg = settings.CONFIG
    st.caption(side["limits"].format(
        chars=NUM(cfg.max_chars), tokens=enc.max_tokens, eps_min=NUM(cfg.eps_min),
        eps_max=NUM(cfg.eps_max), steps=NUM(cfg.max_half_steps),
        engine=side["engine_served" if compute.served() else "engine_embedded"].format(
            engine=cfg.engine, device=enc.device, dtype=getattr(enc, "dtype", ""))))

for w in [*ss.pop("_url_warnings", []), *ss.pop("_notices", [])]:
    st.warning(w)
for i in ss.pop("_infos", []):
    st.info(i)
ss["_shown_ex"] = ss["ex"]

text_a, mode = ss["a"], ss["mode"]
text_b = "" if mode == "self" else ss["b"]
ctx = views.Ctx(model=ss["model"], a=text_a, b=text_b, mode=mode, layer=int(ss["layer"]),
                head=ss["head"], weights=ss["weights"], pool=bool(ss["pool"]),
                n_layers=enc.n_layers, n_heads=enc.n_heads, present=bool(ss["present"]),
                lang=lang(), chart_failed=W["notices"]["chart_failed"])

# --------------------------------------------------------------------------- encode
try:
    n_chars = len(text_a) + len(text_b)
    with st.spinner(W["notices"]["encoding"].format(chars=NUM(n_chars), model=ctx.model)):
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
            st.warning(notices.say("vocabulary", notice, ctx.lang))


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
    w = words()["sliders"]
    scrub.sliders(key="scrub", eps=ss["eps"], steps=ss["steps"], eps_stops=EPS_OPTIONS,
                  step_stops=HALF_STEP_OPTIONS, lattice=lattice,
                  metrics=metrics.rows(r, ctx.lang) if r is not None else [],
                  note="" if live or r is None else scrub.too_large_note(n, m, cap),
                  help={"eps": w["eps_help"], "steps": w["steps_help"]},
                  words=w["words"], num=numbers(ctx.lang), on_change=on_scrub)
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
    for level, text in notices.say_all(r.notices, ctx.lang):  # in the page's language
        (st.warning if level == "warning" else st.info)(text)
    W, num = words(), numbers(ctx.lang)
    w, names = W["notices"], W["views"]
    if ss.get("ex") == "custom" and float(ss["eps"]) != DEFAULTS["eps"]:
        c1, c2 = st.columns([4, 1.3], vertical_alignment="center")
        eps = float(ss["eps"])
        c1.caption(w["own_eps"].format(eps=num(eps), how=w["sharpened" if eps < 1
                                                            else "flattened"],
                                       factor=num(max(eps, 1 / eps))))
        c2.button(w["own_button"], key="own_attention", on_click=own_attention,
                  width="stretch")

    top = st.columns([5, 1], vertical_alignment="bottom")
    with top[0]:
        view = st.segmented_control(W["view_label"], list(names), format_func=names.get, key="view",
                                    required=True, label_visibility="collapsed")
    export = top[1].popover(W["export"]["button"], width="stretch")
    view = view if view in names else "compare"
    if "_pending_state" in ss:  # a view set sidebar controls: redraw the sidebar too
        st.rerun(scope="app")
    ctx = dataclasses.replace(  # what the views' own controls hold (a view reads no session)
        ctx, eps=float(ss["eps"]), hl=str(ss.get("hl", "none")), sset=str(ss.get("sset", "")),
        cands=str(ss.get("cands", "")), scand=int(ss.get("scand", 0) or 0),
        clicks=int(ss.get("_sent_clicks", 0)))
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
        st.error(w["view_failed"].format(error=f"{type(e).__name__}: {e}"))
        figs = []
    with export:
        x = W["export"]
        stem, url = report.slug(r), _share_url()
        if view == "sentences":  # the ranking the view shows, with its settings
            cands, eps = str(ss.get("cands", "")), float(ss["eps"])  # read now: the files

            def ranking():  # are made on a click, outside this run
                return compute.ranking(ctx.model, ctx.a, cands, eps)
            rstem = f"sinkscope_ranking_{report.texts_hash(r)}_eps{eps:g}"
            st.download_button(x["ranking_csv"],
                               lambda: report.ranking_csv(ranking(), url=url),
                               f"{rstem}.csv", "text/csv", key="dl_ranking_csv",
                               on_click="ignore", width="stretch")
            st.download_button(x["ranking_json"],
                               lambda: report.ranking_json(ranking(), url=url),
                               f"{rstem}.json", "application/json", key="dl_ranking_json",
                               on_click="ignore", width="stretch")
        st.download_button(x["plans"], lambda: plans_csv(r), f"{stem}_plans.csv",
                           "text/csv", key="dl_plans", on_click="ignore", width="stretch")
        st.download_button(x["marginals"], lambda: marginals_csv(r),
                           f"{stem}_marginals.csv", "text/csv", key="dl_marginals",
                           on_click="ignore", width="stretch")
        st.download_button(x["json"], lambda: report.relation_json(r, url),
                           f"{stem}.json", "application/json", key="dl_json",
                           on_click="ignore", width="stretch")
        st.download_button(x["npz"], lambda: to_npz(r, url=url), f"{stem}.npz",
                           "application/octet-stream", key="dl_npz", on_click="ignore",
                           width="stretch")
        st.download_button(
            x["html"],
            lambda: report.html_report(r, figs, metrics.table(r, ctx.lang), url=url,
                                       title=f"sinkscope · {names[view]}"),
            f"{stem}_{view}.html", "text/html", key="dl_html", on_click="ignore",
            width="stretch")
        st.caption(x["caption"])
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
waiting.empty()  # the first coupling is out
sync_url()
compute.umap_warmup()  # compiles UMAP in a background thread once per process, after the
# first page is out (compiling during the first run slowed it by seconds on 2 cores)
