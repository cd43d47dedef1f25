"""Upload page (placeholder until the app issue lands)."""
import streamlit as st

st.title("DocMaster")
st.write("Upload and explore document collections. Use the `docmaster` command line meanwhile.")
