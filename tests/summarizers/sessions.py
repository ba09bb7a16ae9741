"""A realistic coding session with planted facts the offline summary must keep."""

from __future__ import annotations

from typing import Any

from contextd.model import Message
from pydantic import TypeAdapter

PLANTED_PATHS = (
    "services/api/ratelimit.py",
    "services/api/app.py",
    "tests/test_ratelimit.py",
    "deploy/config/limits.yaml",
)
PLANTED_CONSTRAINTS = (
    "Never log the request body, it can hold tokens.",
    "We must stay compatible with Python 3.9.",
    "Please don't add new dependencies; prefer the standard library.",
)
PLANTED_DECISIONS = (
    "We'll use a token bucket instead of a fixed window because clients send bursts.",
)
RESOLVED_ERROR = "FAILED tests/test_ratelimit.py::test_burst - AssertionError: expected 429, got 200"
OPEN_ERROR = (
    'services/api/ratelimit.py:42: error: Incompatible return value type '
    '(got "float", expected "int")  [return-value]'
)
PLANTED_ERRORS = (RESOLVED_ERROR, OPEN_ERROR)

_messages = TypeAdapter(list[Message])


def _source(name: str, lines: int) -> str:
    """A plausible Python file, long enough to make the session realistic."""
    body = []
    for n in range(lines):
        body.append(f"def {name}_handler_{n}(request, limiter=None):")
        body.append(f"    \"\"\"Handle route {n} of the {name} service.\"\"\"")
        body.append(f"    payload = request.json().get('item_{n}', {{}})")
        body.append(f"    return respond(payload, status=200, headers={{'x-route': '{n}'}})")
    return "\n".join(body)


def _call(call_id: str, name: str, **arguments: Any) -> dict[str, Any]:
    return {"type": "toolCall", "id": call_id, "name": name, "arguments": arguments}


def _assistant(text: str, *calls: dict[str, Any]) -> dict[str, Any]:
    content: list[dict[str, Any]] = [{"type": "text", "text": text}] if text else []
    content += calls
    return {"role": "assistant", "content": content, "stopReason": "toolUse" if calls else "stop"}


def _result(call_id: str, name: str, text: str, error: bool = False) -> dict[str, Any]:
    return {"role": "toolResult", "toolCallId": call_id, "toolName": name, "content": text, "isError": error}


def _user(text: str) -> dict[str, Any]:
    return {"role": "user", "content": text}


PYTEST_FAILURE = f"""============================= test session starts ==============================
collected 12 items

tests/test_ratelimit.py ...........F                                     [100%]

=================================== FAILURES ===================================
_________________________________ test_burst __________________________________

    def test_burst():
        client = make_client()
        for _ in range(20):
            client.get("/items")
>       assert client.get("/items").status_code == 429
E       AssertionError: expected 429, got 200

tests/test_ratelimit.py:31: AssertionError
=========================== short test summary info ============================
{RESOLVED_ERROR}
========================= 1 failed, 11 passed in 0.91s =========================
"""


def ratelimit_session() -> list[Message]:
    """Adding rate limiting to an API: reads, a decision, a failing test that gets fixed,
    and a type error still open at the end."""
    raw = [
        _user(
            "Add rate limiting to the public API. The limiter goes in services/api/ratelimit.py "
            "and is wired in services/api/app.py. "
            f"{PLANTED_CONSTRAINTS[0]} {PLANTED_CONSTRAINTS[1]}"
        ),
        _assistant("Let me look at the app first.", _call("c1", "read", path="services/api/app.py")),
        _result("c1", "read", _source("app", 120)),
        _assistant("", _call("c2", "read", path="tests/test_ratelimit.py")),
        _result("c2", "read", _source("test", 60)),
        _assistant(
            f"There are two options: a fixed window or a token bucket. {PLANTED_DECISIONS[0]} "
            "The limits will come from the config file.",
        ),
        _user(
            f"Sounds good. {PLANTED_CONSTRAINTS[2]} The limits are configured in "
            "deploy/config/limits.yaml, per route."
        ),
        _assistant(
            "Writing the limiter.",
            _call("c3", "write", path="services/api/ratelimit.py", content=_source("limiter", 30)),
        ),
        _result("c3", "write", "Wrote 120 lines to services/api/ratelimit.py"),
        _assistant("Running the tests.", _call("c4", "bash", command="pytest tests/test_ratelimit.py -q")),
        _result("c4", "bash", PYTEST_FAILURE, error=True),
        _assistant(
            "The burst test fails because the bucket refills before the check.",
            _call("c5", "edit", path="services/api/ratelimit.py", old="refill()", new="consume()"),
        ),
        _result("c5", "edit", "Applied 1 edit to services/api/ratelimit.py"),
        _assistant("", _call("c6", "bash", command="pytest tests/test_ratelimit.py -q")),
        _result("c6", "bash", "............                                   [100%]\n12 passed in 0.84s"),
        _assistant("Fixed the refill order; all tests pass now.", _call("c7", "bash", command="mypy services")),
        _result("c7", "bash", f"{OPEN_ERROR}\nFound 1 error in 1 file (checked 14 source files)", error=True),
        _assistant(
            "mypy reports a type error in the limiter. Next I'll fix the return type of "
            "`remaining()` in services/api/ratelimit.py, then document the limits in docs/ratelimit.md."
        ),
    ]
    return _messages.validate_python(raw)
