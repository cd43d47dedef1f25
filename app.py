"""DocMaster Streamlit app: router only (pages live in pages/)."""
import streamlit as st

st.set_page_config(page_title="DocMaster", page_icon="📚", layout="wide")

pages = [st.Page("pages/upload.py", title="Upload", icon="📥", default=True)]
st.navigation(pages).run()
