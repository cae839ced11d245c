"""One frame around every page: what each page had repeated, done once.

``app.py`` is the router (``st.navigation`` over ``sinkscope_app/pages/main.py``, ``learn.py``,
``align.py`` and ``lab.py``, each a one-line call into its folder of
``sinkscope_app``). Before the page runs, the frame (:func:`route`): keeps every control's
state alive (Streamlit forgets the widgets a run does not draw, so a page switch would
lose the other pages'), picks the language (one ``lang`` key: the link's, else the one
chosen before, else the browser's), sets the page's title and layout, makes the page's
navigation parameters browser-history entries, reads the page's address when the page
is first opened in the session or through Back and Forward (its declared
:class:`~sinkscope_app.inputs.Schema`, notices in the page's language), and draws the
sidebar's head: the language picker and the links to the other pages, carrying the
language. After the page, the frame writes the page's state back into the address. A
fragment asks for the frame through :func:`for_fragment`: run alone after a change outside
it, it runs the whole page instead.

A page is a module with ``SCHEMA`` (its address), ``show(fr)`` (the page itself, given
the :class:`Frame`), and optionally ``KEEP`` (more session keys to keep alive),
``context(fr)`` (what reading its address needs, e.g. the model's shape), ``head(fr)``
(drawn atop the sidebar), ``links(fr)`` (the sidebar's links, by default every other
page) and ``SHORT_LINKS`` (its first run leaves the address as it was opened).
"""

from __future__ import annotations

import importlib
import sys
from dataclasses import dataclass, field
from typing import Any

import streamlit as st

from . import history, locale, where
from .inputs import parse_bool

PAGES = ("main", "learn", "align", "lab")
# Streamlit cuts a page link's label to one line ("…cualquier acop"); ours wrap instead.
LINK_CSS = ('<style>[data-testid="stPageLink-NavLink"] :is(span, div, p) '
            "{white-space: normal; overflow: visible; text-overflow: clip}</style>")
ICONS = {"main": "🔗", "learn": "🎓", "align": "🔗", "lab": "🧪"}
LINK_ICONS = {"main": ":material/arrow_back:", "learn": ":material/school:",
              "align": ":material/link:", "lab": ":material/model_training:"}


@dataclass
class Frame:
    """What every page gets from the frame.

    Attributes:
        page: the page's name ("main", "learn", "align", "lab").
        lang: the page's language. theme: "light" or "dark" (the viewer's).
        first: the page is opened for the first time in this session.
        navigated: this run came from the browser's Back or Forward button.
        read: the address was read in this run (first visit or Back / Forward).
        ctx: what the page's ``context`` returned (None without one).
        warnings: the notices about the address, in the page's language.
        keep_address: this run leaves the address as it is: the first run of a page with
            ``SHORT_LINKS`` opened at an address without a bad value, which says its state
            already (a missing parameter is its default); written before the page's
            history script runs, the address would be a history entry of its own.
        drawn: the page's controls outside its fragments as the page was drawn with them
            (:func:`page_state`), once the page has run (None while it runs).
    """

    page: str
    lang: str
    theme: str
    first: bool = False
    navigated: bool = False
    read: bool = False
    ctx: Any = None
    warnings: list[str] = field(default_factory=list)
    keep_address: bool = False
    in_place: bool = False
    drawn: dict | None = None

    @property
    def module(self):
        return page_module(self.page)

    @property
    def words(self) -> dict:
        """The page's words in its language (``text/<page>.<lang>.json``)."""
        return locale.words(self.page, self.lang)

    @property
    def num(self):
        """How the page's language writes numbers (:func:`locale.numbers`)."""
        return locale.numbers(self.lang)

    def sync(self) -> None:
        """Write the page's state into the address (only when something changed; not
        while :attr:`keep_address`)."""
        if self.keep_address:
            return
        q = self.module.SCHEMA.to_query(st.session_state)
        if self.in_place:  # once: a later write in the run compares with this one
            self.in_place = False
            history.correct(q, key=f"fix_{self.page}")
        elif st.query_params.to_dict() != q:
            st.query_params.from_dict(q)


def page_module(name: str):
    """The module of page ``name`` (``sinkscope_app.<name>.page``)."""
    return importlib.import_module(f"sinkscope_app.{name}.page")


def route() -> None:
    """The router: the page the address names, inside the frame (``app.py`` calls it)."""
    from streamlit.runtime.scriptrunner_utils.exceptions import StopException

    nav = st.navigation([st.Page(where.page(name), title=name, url_path=name,
                                 default=name == "main") for name in PAGES],
                        position="hidden")
    fr = open_frame(nav.url_path or "main")
    try:
        nav.run()
    except StopException:
        fr.sync()
        raise
    fr.drawn = page_state(fr.module)
    fr.sync()


def current() -> Frame:
    """The frame of the page running in this session (a page calls it first)."""
    return st.session_state["_frame"]


def page_state(module) -> dict:
    """The page's controls that live outside its fragments (``scope="page"``, the
    language among them), as the session holds them now."""
    ss = st.session_state
    return {p.key: ss.get(p.key) for p in module.SCHEMA.params if p.scope != "view"}


def for_fragment() -> Frame:
    """The frame, for a fragment (its first call): in a run of the fragment alone, when a
    control outside it changed since the page was drawn, the whole page runs instead.

    Streamlit (1.67) sends the widget changes of one moment in one rerun, scoped to the
    first one's fragment: a click on the language picker that takes the focus off a live
    slider (whose release sends its value) ran only the sliders' fragment, drawn with the
    old frame (its language, its texts) while the address took the new language."""
    fr = current()
    if fr.drawn is not None and fr.drawn != page_state(fr.module):
        st.rerun(scope="app")
    return fr


def language(read: bool) -> str:
    """The page's language: the address's when it is read (and known), else the one the
    session chose, else the browser's when it is one of ours, else English."""
    ss = st.session_state
    raw = st.query_params.get("lang") if read else None
    if raw in locale.LANGS:
        ss["lang"] = raw
    if ss.get("lang") not in locale.LANGS:
        try:
            browser = str(st.context.locale or "").split("-")[0].lower()
        except Exception:  # another Streamlit, or no browser (AppTest)
            browser = ""
        ss["lang"] = browser if browser in locale.LANGS else locale.DEFAULT_LANG
    return ss["lang"]


def keep_alive() -> None:
    """Keep every page's controls across runs, even while their widgets are not drawn
    (a page whose module is not imported yet has run nowhere in this process: nothing of
    its to keep, and its imports stay off the first page's way)."""
    ss = st.session_state
    for name in PAGES:
        module = sys.modules.get(f"sinkscope_app.{name}.page")
        if module is None:
            continue
        for k in (*module.SCHEMA.keys, *getattr(module, "KEEP", ())):
            if k in ss:
                ss[k] = ss[k]


def open_frame(name: str) -> Frame:
    """Everything around page ``name`` before it runs (see the module's docstring)."""
    ss = st.session_state
    module = page_module(name)
    seen = f"_read_{name}"
    navigated = history.navigated() and seen in ss
    read = seen not in ss or navigated
    lang = language(read)
    theme = "dark" if getattr(st.context.theme, "type", None) == "dark" else "light"
    present = bool(parse_bool(st.query_params.get("present")))
    st.set_page_config(page_title=locale.words(name, lang)["page_title"], page_icon=ICONS[name],
                       layout="wide", initial_sidebar_state="collapsed" if present else "auto")
    keep_alive()
    fr = Frame(name, lang, theme, first=seen not in ss, navigated=navigated, read=read)
    ss["_frame"] = fr
    schema = module.SCHEMA
    if schema.nav:
        history.track(schema.nav, key=f"history_{name}")
    fr.ctx = module.context(fr) if hasattr(module, "context") else None
    if read:
        fr.warnings = read_address(module, fr)
        ss[seen] = True
        fr.keep_address = (getattr(module, "SHORT_LINKS", False) and fr.first
                           and not navigated and not fr.warnings)
        fr.in_place = bool(fr.warnings) or (fr.first and not navigated)
    sidebar(fr)
    return fr


def read_address(module, fr: Frame) -> list[str]:
    """The page's defaults, then whatever its (possibly hostile) address asks for, into
    the session; the notices, in the page's language."""
    ss = st.session_state
    parsed = module.SCHEMA.parse(st.query_params.to_dict(), fr.ctx, lang=fr.lang)
    for p in module.SCHEMA.params:
        if p.default is not None:
            ss.setdefault(p.key, p.default)
    ss.update(parsed.values)
    return parsed.warnings


def sidebar(fr: Frame) -> None:
    """The sidebar's head on every page: the language picker, then the links to the
    other pages (each carrying the language)."""
    w = locale.words("frame", fr.lang)
    links = fr.module.links(fr) if hasattr(fr.module, "links") else [
        (name, w["links"][name]) for name in PAGES if name != fr.page]
    with st.sidebar:
        st.html(LINK_CSS)
        if hasattr(fr.module, "head"):
            fr.module.head(fr)
        st.segmented_control(w["language"], list(locale.LANGS), format_func=locale.LANGS.get,
                             key="lang", required=True)
        for name, label in links:
            st.page_link(where.page(name), label=label, icon=LINK_ICONS[name],
                         query_params={"lang": fr.lang})


def notices(fr: Frame) -> None:
    """The address's notices, where the page wants them (once)."""
    for text in fr.warnings:
        st.warning(text)
    fr.warnings = []
