"""What every page says about its jobs (:mod:`sinkscope_app.jobs`), in its language: a
job waiting in line, one the engine lost (its worker died) or that failed, with a Restart
button, one stopped at its time limit, one the address named that the engine no longer
knows, and the engine's refusal to start one. The words are the frame's
(``text/frame.<lang>.json``, ``jobs``); the engine's errors are worded by their codes
(:func:`sinkscope_app.locale.error`)."""

from __future__ import annotations

import logging

import streamlit as st

from engine.client import EngineUnavailable
from engine.errors import SinkscopeError

from . import frame, jobs, locale, outage

log = logging.getLogger("sinkscope.jobs")


def words(lang: str) -> dict:
    """The frame's job words in ``lang``."""
    return locale.words("frame", lang)["jobs"]


def waiting(status, lang: str) -> str:
    """A waiting job's place in line, in ``lang``."""
    return words(lang)["waiting"].format(place=locale.numbers(lang).count(max(status.place, 1)))


def _error(status, lang: str) -> str:
    return "" if status.error is None else locale.error(status.error.exception(), lang)


def trouble(status, name: str, lang: str, *, key: str) -> bool:
    """Say what went wrong with an ended job ``name`` (``status``: its ``JobStatus``): lost
    (its worker died) or failed, with a Restart button (``key``), or stopped at its time
    limit; True when it said something (a lost or failed job has nothing else to show)."""
    w = words(lang)
    if status.state == "lost":
        st.error(w["lost"].format(reason=status.reason or "?"))
    elif status.state == "failed":
        st.error(w["failed"].format(error=_error(status, lang)))
    else:
        if status.reason == "deadline":
            st.warning(w["deadline"].format(error=_error(status, lang)))
        return False
    st.button(w["restart"], key=key, on_click=restart, args=(name, lang))
    return True


def restart(name: str, lang: str) -> None:
    """Restart's callback: the same job again (the page follows the new one)."""
    try:
        jobs.restart(st.session_state, name)
    except (SinkscopeError, EngineUnavailable) as e:
        refused(name, e, lang)


def refused(name: str, e: BaseException, lang: str, say=None) -> None:
    """Keep why the engine did not start job ``name`` (or what it would not do with it),
    in ``lang``: :func:`find` says it on the next run. ``say(e)``: the page's own sentence
    for the errors it words itself (None: the engine's error, worded by its code)."""
    own = say(e) if say is not None else None
    said = own or words(lang)["refused"].format(error=locale.error(e, lang))
    st.session_state.setdefault(REFUSED, {})[name] = said


REFUSED = "_jobs_refused"  # session key: name → why the engine refused it, said once


def notices(name: str, lang: str) -> None:
    """What the page says about job ``name`` before it shows it: the engine no longer
    knows the job the address named, or refused to start (or restart) it."""
    ss = st.session_state
    old = jobs.gone(ss, name)
    if old:
        st.info(words(lang)["gone"].format(id=old))
    said = (ss.get(REFUSED) or {}).pop(name, None)
    if said:
        st.error(said)


def find(name: str, lang: str):
    """The session's job ``name`` (its status), adopting the id the address holds, and
    what the page must say first (:func:`notices`); None when there is none. A served
    engine that does not answer is said (and probed, so the page comes back by itself);
    None then too."""
    try:
        status = jobs.find(st.session_state, name)
    except EngineUnavailable as e:
        notices(name, lang)
        outage.notice(e, lang)
        return None
    notices(name, lang)
    return status


def follow(name: str, draw, lang: str):
    """:func:`sinkscope_app.jobs.follow` for the page: its last status; None when there is
    none, or when a served engine stopped answering meanwhile (said, as :func:`find`).
    The page's address is written first (the frame writes it after the page, and this run
    may follow the job for minutes): a reload meanwhile finds the job by its id."""
    try:
        frame.current().sync()
    except KeyError:  # no frame (a page run alone, in a test)
        pass
    try:
        return jobs.follow(st.session_state, name, draw)
    except EngineUnavailable as e:
        outage.notice(e, lang)
        return None


def submit(name: str, body: dict, lang: str, say=None) -> bool:
    """Start a job (a button's callback); the engine's refusal is said on the next run
    (``say``: as :func:`refused`). Whether it started."""
    try:
        jobs.submit(st.session_state, name, body)
        return True
    except (SinkscopeError, EngineUnavailable) as e:
        refused(name, e, lang, say)
        return False


def stop(name: str) -> None:
    """Stop's callback (the job keeps its best or partial result)."""
    try:
        jobs.stop(st.session_state, name)
    except (SinkscopeError, EngineUnavailable) as e:  # ended meanwhile, or the engine away
        log.info("stop %s: %s", name, e)
