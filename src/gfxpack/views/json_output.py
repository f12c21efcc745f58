"""How every ``--json`` output of gfxpack is printed."""

from __future__ import annotations

import json


def dumps(data: object) -> str:
    return json.dumps(data, indent=2, ensure_ascii=False) + "\n"
