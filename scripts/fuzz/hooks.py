"""Schemathesis hooks for the positions API.

Generated Idempotency-Key values repeat (short strings are drawn often), and the API answers a
key reused for another request with 422, as it should (decision 33). The generated
requests are distinct requests, so each valid key drawn is made unique; an invalid one (empty,
too long, not printable ASCII) is sent as drawn, for the API to refuse. Only the test data
changes; every check runs as configured.
"""

import itertools
import re

import schemathesis

_serial = itertools.count()
_VALID = re.compile(r"[\x20-\x7e]{1,255}")


@schemathesis.hook
def before_call(ctx, case, **kwargs):
    headers = case.headers or {}
    for name in list(headers):
        value = headers[name]
        if name.lower() == "idempotency-key" and isinstance(value, str) and _VALID.fullmatch(value):
            suffix = f"~{next(_serial)}"
            headers[name] = value[: 255 - len(suffix)] + suffix
