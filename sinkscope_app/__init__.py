"""App-only helpers for sinkscope's Streamlit app: URL state, cached engine calls,
views and exports. The engine and the figures live in ``engine`` and ``viz``."""
