"""DocMaster Streamlit app: the router.

Sets the page config, fills the session state with its defaults, draws the shared
sidebar settings panel and runs the chosen page. Pages live in ``pages/``; the glue
they share lives in ``ui/``. Run with ``streamlit run app.py``.
"""
from pathlib import Path

import streamlit as st

from ui.resources import preload_page_libraries
from ui.sidebar import render_sidebar
from ui.state import ROUTER_ACTIVE, init_state


def main() -> None:
    """Draw the app: page config, session defaults, the router and the sidebar."""
    # a local image: a Material icon or emoji favicon is fetched from a font / emoji server (fails offline)
    st.set_page_config(page_title="DocMaster", page_icon=str(Path(__file__).with_name("ui") / "assets" / "favicon.png"),
                       layout="wide")
    init_state()
    pages = [
        st.Page("pages/upload.py", title="Upload", icon=":material/upload_file:", default=True),
        st.Page("pages/tree.py", title="Tree explorer", icon=":material/account_tree:"),
        st.Page("pages/hyperedges.py", title="Hyper-edge graph", icon=":material/hub:"),
        st.Page("pages/clusters.py", title="Semantic clusters", icon=":material/scatter_plot:"),
        st.Page("pages/filter.py", title="Filter", icon=":material/filter_alt:"),
        st.Page("pages/chat.py", title="Chat", icon=":material/forum:"),
    ]
    page = st.navigation(pages)
    render_sidebar()
    st.session_state[ROUTER_ACTIVE] = True  # this session's pages have gone through the router
    try:
        page.run()
    finally:  # after the first page's run, not competing with it: the charts' libraries, once per server
        preload_page_libraries()


# Streamlit runs this file as "__main__". The parse process an ingest starts (multiprocessing
# "spawn") re-imports the main script as "__mp_main__": it must not draw the app there (it did,
# in bare mode, filling the terminal with "missing ScriptRunContext" warnings).
if __name__ != "__mp_main__":
    main()
