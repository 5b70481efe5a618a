"""Importing a Hugging Face config.json on the Models page as a model of this session."""

from __future__ import annotations

from dataclasses import replace

import streamlit as st

from kvview import params as P
from kvview.mdtext import md_escape
from ui.sidebar import on_model_change
from ui.urlstate import imported_models


def import_config(max_bytes: int) -> None:
    """Button callback: import the uploaded or pasted config.json and select it.

    Runs before the script, so it may set the sidebar's model; the outcome is shown by
    ``show_import_result``.
    """
    from kvmodel.hfconfig import load_hf_config

    ss = st.session_state
    upload, quant = ss.get("cfg_upload"), ss.get("quant_upload")
    pasted = (ss.get("cfg_paste") or "").strip()
    source = upload.getvalue() if upload is not None else pasted.encode()  # content, not a path
    name = md_escape(upload.name) if upload is not None else "the pasted config.json"
    if not source:
        ss["_import_result"] = (
            "error",
            "Nothing to import: upload a config.json or paste its text first.",
        )
        return
    if len(source) > max_bytes:
        ss["_import_result"] = (
            "error",
            f"{name} is {len(source):,} bytes; a config.json is "
            f"expected to be under {max_bytes:,} bytes.",
        )
        return
    stem = upload.name.removesuffix(".json").lower() if upload is not None else None
    try:
        spec = load_hf_config(
            source,
            model_id=stem and stem.replace("--", "-"),
            quant_config=quant.getvalue() if quant is not None else None,
        )
    except ValueError as exc:
        ss["_import_result"] = ("error", f"Could not import {name}: {md_escape(exc)}")
        return
    mid = P.imported_id(spec.id)  # a cfg- slug: never a catalog id, never markdown
    taken, base, k = imported_models(), mid, 1
    while mid in taken and taken[mid] != replace(spec, id=mid):  # another model, same name
        k += 1
        mid = f"{base}-{k}"
    imported_models()[mid] = replace(spec, id=mid)
    ss["model"] = mid
    on_model_change()
    ss["_import_result"] = (
        "success",
        f"Imported {md_escape(spec.name)} as “{mid}” and selected it in the "
        "sidebar; the link now carries its fields.",
    )


def show_import_result() -> None:
    kind, msg = st.session_state.pop("_import_result", (None, None))
    if kind == "error":
        st.error(msg)
    elif kind == "success":
        st.success(msg)
