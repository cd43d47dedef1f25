#!/usr/bin/env python
"""Transformer paper before/after (issue 27): TITLE nodes, numbered sections found, EQUATION nodes, per parser."""
import sys; from pathlib import Path; sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from docmaster_core.parsing import get_parser
from docmaster_core.parsing.base import heading_numbering
from docmaster_core.model import NodeType
import glob
f = glob.glob(str(Path(__file__).resolve().parents[2] / 'shared/corpus/pdf/1706.03762*.pdf'))[0]
exp = ["1","2","3","3.1","3.2","3.2.1","3.2.2","3.2.3","3.3","3.4","3.5","4","5","5.1","5.2","5.3","5.4","6","6.1","6.2","6.3","7"]
for p in ("fast", "layout"):
    d = get_parser(p).parse(f)
    T = [e for e in d.elements if e.type == NodeType.TITLE]
    nums = [heading_numbering(e.text)[0] for e in T if heading_numbering(e.text)]
    E = [e.text for e in d.elements if e.type == NodeType.EQUATION]
    tx = [e.text for e in d.elements if e.type == NodeType.TEXT]
    print(p, "titles", len(T), "numbered found", len(set(nums) & set(exp)), "/22", "equations", len(E),
          "FFN eq", any(t.startswith("FFN(x)") for t in E), "FFN in TEXT", any("FFN(x) = max" in t for t in tx),
          "MultiHead eq", any(t.startswith("MultiHead(") for t in E), "Attention eq", any(t.startswith("Attention(Q") for t in E))
    print("   eqs:", [t[:40] for t in E])
